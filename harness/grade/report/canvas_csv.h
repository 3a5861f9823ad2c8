// Canvas: canvas-import.csv, its gradebook import, a column per lab.
#pragma once

#include "catalog.h"
#include "model.h"
#include "report/report_writer.h"
#include "roster.h"

#include <string>
#include <vector>

namespace grade {

// Canvas's gradebook import: Student, ID, SIS User ID, SIS Login ID, Section, then a column
// per lab (a new assignment on import), a "Points Possible" row first. A lab that could not
// be judged here (no GPU) is left blank, which leaves Canvas's grade as it was.
std::string canvas_csv(const std::vector<Report>& reports, const std::vector<LabSpec>& labs, const Roster& roster);

class CanvasCsvWriter final : public ReportWriter {
 public:
  void write_batch(const BatchOutput& batch) override;
  std::vector<BatchFile> batch_files() const override { return {{"canvas-import.csv", BatchFile::For::platforms}}; }
};

}  // namespace grade
