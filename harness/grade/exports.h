// Every file a grading run writes, from the one result model: the gradebook and JUnit for the
// instructor, the reports to hand back, and the files course platforms import (they have no
// GPU, so the scores travel as files). Each export holds only the labs asked for (`labs`).
#pragma once

#include "catalog.h"
#include "model.h"
#include "roster.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace grade {

// A row per student, a column per lab, the total and the maximum, whether an instructor's
// secret changed the inputs (yes/no), then notes: why a lab was not graded, as its report
// says it. With a roster, the student's id, name and email follow the folder's name.
std::string gradebook_csv(const std::vector<Report>& reports, const std::vector<LabSpec>& labs,
                          const Roster& roster = {});

// JUnit XML: a test suite per student and lab; a test case for the lab as a whole (fails when
// the lab was not graded: a build error, a refused file) and one per case. A case that did not
// run is skipped, with the reason, never a failure.
std::string junit_xml(const std::vector<Report>& reports, const std::vector<LabSpec>& labs);

// Gradescope's autograder results.json for one submission: a test per case (hidden cases
// hidden); the maxima, in hundredths of a point, add up to the labs' total exactly, and the
// score is what the tests' scores add up to. The output gives each lab's points and note and
// the compiler's messages, cut to a sane length.
nlohmann::json gradescope_results(const Report& report, const std::vector<LabSpec>& labs);

// PrairieLearn's external-grader results.json for one submission: gradable (false when no
// lab could be judged here), score in [0, 1], message, output and a test per case.
nlohmann::json prairielearn_results(const Report& report, const std::vector<LabSpec>& labs);

// Canvas's gradebook import: Student, ID, SIS User ID, SIS Login ID, Section, then a column
// per lab (a new assignment on import), a "Points Possible" row first. A lab that could not
// be judged here (no GPU) is left blank, which leaves Canvas's grade as it was.
std::string canvas_csv(const std::vector<Report>& reports, const std::vector<LabSpec>& labs, const Roster& roster);

// Scores for Gradescope's score import: Name, SID, Email, a column per lab, Total Score.
std::string gradescope_scores_csv(const std::vector<Report>& reports, const std::vector<LabSpec>& labs,
                                  const Roster& roster);

// The file name (without extension) of each report's files: the folder's name where it is
// plain ASCII (letters, digits, . _ -), else a slug of it ("dave smith" -> dave-smith,
// "José Núñez" -> Jose-Nunez); unique, ignoring case, in the order given.
std::vector<std::string> report_file_names(const std::vector<Report>& reports);

// The console's summary of a batch: a line per student (columns aligned for any UTF-8 name),
// then, indented, why each lab not graded was not.
std::string batch_summary(const std::vector<Report>& reports, const std::vector<LabSpec>& labs);

// A batch's files under out_dir: gradebook.csv, junit.xml, canvas-import.csv,
// gradescope-scores.csv; per student (report_file_names): students/WHO.{json,md},
// handout/WHO.html (no hidden case's details: ready to hand back), gradescope/WHO/results.json
// and prairielearn/WHO/results.json.
void write_batch_outputs(const std::vector<Report>& reports, const std::vector<LabSpec>& labs,
                         const std::string& out_dir, const Roster& roster = {});

// One run's reports (`grade lab`, `grade all`) for the one who ran it, hidden details shown:
// dir/WHO.{json,md,html}.
void write_run_reports(const Report& report, const std::vector<LabSpec>& labs, const std::string& dir);

}  // namespace grade
