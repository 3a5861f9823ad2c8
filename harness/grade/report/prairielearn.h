// PrairieLearn: per lab and student, the results.json of its external grader.
#pragma once

#include "catalog.h"
#include "model.h"
#include "report/report_writer.h"

#include <nlohmann/json.hpp>

namespace grade {

// PrairieLearn's external-grader results.json for one submission's lab: gradable (false where
// the lab was not judged here, which costs the student no attempt), score in [0, 1] (the
// lab's points over its maximum), message, output and a test per case, as Gradescope's.
nlohmann::json prairielearn_results(const Report& report, const LabSpec& lab);

// A batch's prairielearn/LAB/WHO/results.json.
class PrairieLearnWriter final : public ReportWriter {
 public:
  void write_batch(const BatchOutput& batch) override;
  std::vector<BatchFile> batch_files() const override { return {{"prairielearn/LAB/", BatchFile::For::platforms}}; }
};

}  // namespace grade
