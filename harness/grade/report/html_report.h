// The HTML report: one self-contained file (inline CSS and SVG, no script, nothing fetched)
// written beside the JSON and Markdown reports, from the same result model: WHO.html of a
// run, handout/WHO.html of a batch (hidden details withheld, ready to hand back).
#pragma once

#include "catalog.h"
#include "model.h"
#include "report/report_writer.h"

#include <string>
#include <vector>

namespace grade {

// Text made safe for HTML element content and attribute values: & < > " ' become entities.
std::string html_escaped(const std::string& text);

// The kit's HTML pages' shared style sheet (the reports, the speed board); a page adds its own.
extern const char* const page_base_style;

// Per lab: status and total, each correctness case with its verdict and hint, and per
// performance case three plots: your time beside the reference's (and the library anchor's,
// when the runner's record has an "anchor": {"name", "median_ms"}), % of the GPU's measured
// read bandwidth, and the points curve of the lab's rubric (`labs`, from lab.yaml) with your
// ratio marked. Hidden cases' details follow the Markdown report's rule.
std::string to_html(const Report& report, const std::vector<LabSpec>& labs, bool show_hidden_details);

class HtmlReportWriter final : public ReportWriter {
 public:
  void write_run(const RunOutput& run) override;
  void write_batch(const BatchOutput& batch) override;
  std::vector<BatchFile> batch_files() const override { return {{"handout/", BatchFile::For::students}}; }
};

}  // namespace grade
