// The Markdown report: WHO.md of a run, students/WHO.md of a batch (hidden details withheld,
// so that it can be handed back).
#pragma once

#include "model.h"
#include "report/report_writer.h"

#include <string>

namespace grade {

// Per lab: status, points, note and compiler messages, a table of its cases, the hints that
// three or more failing cases share, and the sanitizer's findings. A lab not handed in is one
// line. A failing hidden case's details are withheld unless show_hidden_details.
std::string to_markdown(const Report& report, bool show_hidden_details);

class MarkdownReportWriter final : public ReportWriter {
 public:
  void write_run(const RunOutput& run) override;
  void write_batch(const BatchOutput& batch) override;
  std::vector<BatchFile> batch_files() const override { return {{"students/", BatchFile::For::instructor}}; }
};

}  // namespace grade
