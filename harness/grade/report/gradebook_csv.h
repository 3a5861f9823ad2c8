// The instructor's gradebook: gradebook.csv.
#pragma once

#include "catalog.h"
#include "model.h"
#include "report/report_writer.h"
#include "roster.h"

#include <string>
#include <vector>

namespace grade {

// A row per student, a column per lab, the total and the maximum, whether an instructor's
// secret changed the inputs (yes/no), then notes: why a lab was not graded, as its report
// says it. With a roster, the student's id, name and email follow the folder's name. A lab
// not judged here is a blank cell, and so is the total of a row that has one.
std::string gradebook_csv(const std::vector<Report>& reports, const std::vector<LabSpec>& labs,
                          const Roster& roster = {});

class GradebookCsvWriter final : public ReportWriter {
 public:
  void write_batch(const BatchOutput& batch) override;
  std::vector<BatchFile> batch_files() const override { return {{"gradebook.csv", BatchFile::For::gradebook}}; }
};

}  // namespace grade
