// What a batch's tables share (the gradebook, the platforms' files, the console's summary):
// each report's labs asked for, a lab's points as a cell, why labs were not graded.
#pragma once

#include "catalog.h"
#include "model.h"
#include "text.h"

#include <string>
#include <vector>

namespace grade {

// The report's result for the lab asked for; none where the report lacks it.
const LabResult* asked_lab(const Report& report, const LabSpec& spec);
// A report's labs in the order asked; a lab asked for that the report lacks is left out.
std::vector<const LabResult*> asked_labs(const Report& report, const std::vector<LabSpec>& labs);

// The lab as a platform's score cell: blank where it was not judged here, so that an import
// leaves the platform's grade as it was.
std::string score_cell(const LabResult* lab);
// A total as a cell: blank unless every lab in it was judged here.
std::string total_cell(const Total& total);

// Labs not graded for the same reason go together: a submission that is a file is one note.
struct LabsWithReason {
  std::vector<std::string> ids;
  std::string reason;
};
std::vector<LabsWithReason> not_graded_reasons(const Report& report, const std::vector<LabSpec>& labs);
// "01, 03, 05-13".
std::string labs_named(const LabsWithReason& labs);

}  // namespace grade
