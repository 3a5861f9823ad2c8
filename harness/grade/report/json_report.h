// The JSON report: WHO.json of a run, students/WHO.json of a batch, every detail in them
// (model.h's to_json: the shape scripts and the speed board read).
#pragma once

#include "report/report_writer.h"

namespace grade {

class JsonReportWriter final : public ReportWriter {
 public:
  void write_run(const RunOutput& run) override;
  void write_batch(const BatchOutput& batch) override;
  std::vector<BatchFile> batch_files() const override { return {{"students/", BatchFile::For::instructor}}; }
};

}  // namespace grade
