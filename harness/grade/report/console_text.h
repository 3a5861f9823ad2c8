// What the grader prints: one run's report as text, and a batch's summary.
#pragma once

#include "catalog.h"
#include "model.h"

#include <string>
#include <vector>

namespace grade {

// One run's report for a terminal: per lab its GPU, note, compiler messages, failing cases
// (hints that differ only in their numbers given once), sanitizer findings, timed cases and
// total. A failing hidden case's details are withheld unless show_hidden_details.
std::string to_text(const Report& report, bool show_hidden_details);

// The console's summary of a batch: a line per student (columns aligned for any UTF-8 name),
// then, indented, why each lab not graded was not.
std::string batch_summary(const std::vector<Report>& reports, const std::vector<LabSpec>& labs);

}  // namespace grade
