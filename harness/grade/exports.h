// The gradebook formats, all written from the one result model.
#pragma once

#include "catalog.h"
#include "model.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace grade {

// A row per student, a column per lab, the total and the maximum, whether an instructor's
// secret changed the inputs (yes/no), then notes (labs that failed to build, crashed...).
// Ready for an LMS import.
std::string gradebook_csv(const std::vector<Report>& reports, const std::vector<LabSpec>& labs);

// Gradescope's autograder results.json for one submission: one test per case, hidden cases
// marked hidden.
nlohmann::json gradescope_results(const Report& report);

// JUnit XML: a test suite per student and lab, a test case per case.
std::string junit_xml(const std::vector<Report>& reports);

// Writes gradebook.csv, junit.xml, and per student: students/WHO.{json,md,html} (Markdown
// and HTML without hidden cases' details, for handing back) and gradescope/WHO/results.json.
void write_batch_outputs(const std::vector<Report>& reports, const std::vector<LabSpec>& labs,
                         const std::string& out_dir);

}  // namespace grade
