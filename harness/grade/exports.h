// Every file a grading run writes, from the one result model: the gradebook and JUnit for the
// instructor, the reports to hand back, and the files course platforms import (they have no
// GPU, so the scores travel as files). Each export holds only the labs asked for (`labs`).
// Every file gives a lab's points as lab_points (model.h) does, to the hundredth, and leaves
// out the points of a lab not judged here (no GPU, a fault of the kit): never a 0.
#pragma once

#include "catalog.h"
#include "model.h"
#include "roster.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace grade {

// One CSV line (RFC 4180): a field holding a comma, a quote or a line break is quoted.
std::string csv_row(const std::vector<std::string>& fields);

// A row per student, a column per lab, the total and the maximum, whether an instructor's
// secret changed the inputs (yes/no), then notes: why a lab was not graded, as its report
// says it. With a roster, the student's id, name and email follow the folder's name. A lab
// not judged here is a blank cell, and so is the total of a row that has one.
std::string gradebook_csv(const std::vector<Report>& reports, const std::vector<LabSpec>& labs,
                          const Roster& roster = {});

// JUnit XML: a test suite per student and lab; a test case for the lab as a whole (fails when
// the lab was not graded: a build error, a refused file, with the compiler's messages as the
// failure's text) and one per case. A case that did not run is skipped, with the reason,
// never a failure.
std::string junit_xml(const std::vector<Report>& reports, const std::vector<LabSpec>& labs);

// A course posts each lab as an assignment of its own, so the platforms' per-student files
// are per lab: the report's lab `lab` only.

// Gradescope's autograder results.json for one submission's lab: a test per case named by
// kind and case ("performance: uniform-100MiB"; hidden cases hidden), their maxima in
// hundredths adding up to the lab's maximum, their scores to the lab's points, which is the
// score. The output gives the lab's points and note and the compiler's messages, cut to a
// sane length. None where the lab was not judged here: Gradescope has no "not graded", and an
// autograder that finds no file gives no score rather than a 0.
std::optional<nlohmann::json> gradescope_results(const Report& report, const LabSpec& lab);

// PrairieLearn's external-grader results.json for one submission's lab: gradable (false where
// the lab was not judged here, which costs the student no attempt), score in [0, 1] (the
// lab's points over its maximum), message, output and a test per case, as Gradescope's.
nlohmann::json prairielearn_results(const Report& report, const LabSpec& lab);

// Canvas's gradebook import: Student, ID, SIS User ID, SIS Login ID, Section, then a column
// per lab (a new assignment on import), a "Points Possible" row first. A lab that could not
// be judged here (no GPU) is left blank, which leaves Canvas's grade as it was.
std::string canvas_csv(const std::vector<Report>& reports, const std::vector<LabSpec>& labs, const Roster& roster);

// Scores for Gradescope's score import into one lab's assignment: Name, SID, Email, Total
// Score (the lab's points; blank where it was not judged here).
std::string gradescope_scores_csv(const std::vector<Report>& reports, const LabSpec& lab, const Roster& roster);

// The file name (without extension) of each report's files: the folder's name where it is
// plain ASCII (letters, digits, . _ -), else a slug of it ("dave smith" -> dave-smith,
// "José Núñez" -> Jose-Nunez); unique, ignoring case. A plain-ASCII name is kept whatever
// the order: a slug that would clash with it gets "-2".
std::vector<std::string> report_file_names(const std::vector<Report>& reports);

// The console's summary of a batch: a line per student (columns aligned for any UTF-8 name),
// then, indented, why each lab not graded was not.
std::string batch_summary(const std::vector<Report>& reports, const std::vector<LabSpec>& labs);

// A batch's files under out_dir: gradebook.csv, junit.xml, canvas-import.csv; per lab
// gradescope-scores/LAB.csv; per student (report_file_names) students/WHO.{json,md} and
// handout/WHO.html (no hidden case's details: ready to hand back); per lab and student
// gradescope/LAB/WHO/results.json (where the lab was judged here) and
// prairielearn/LAB/WHO/results.json. LAB is the lab's folder, "01-histogram".
void write_batch_outputs(const std::vector<Report>& reports, const std::vector<LabSpec>& labs,
                         const std::string& out_dir, const Roster& roster = {});

// One run's reports (`grade lab`, `grade all`) for the one who ran it, hidden details shown:
// dir/WHO.{json,md,html}.
void write_run_reports(const Report& report, const std::vector<LabSpec>& labs, const std::string& dir);

}  // namespace grade
