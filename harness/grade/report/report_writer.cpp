#include "report/report_writer.h"

#include "report/canvas_csv.h"
#include "report/file_names.h"
#include "report/gradebook_csv.h"
#include "report/gradescope.h"
#include "report/html_report.h"
#include "report/json_report.h"
#include "report/junit_xml.h"
#include "report/markdown_report.h"
#include "report/prairielearn.h"

#include <fstream>

namespace fs = std::filesystem;

namespace grade {

void ReportWriters::write_run(const RunOutput& run) {
  for (const auto& writer : writers_) writer->write_run(run);
}

void ReportWriters::write_batch(const BatchOutput& batch) {
  for (const auto& writer : writers_) writer->write_batch(batch);
}

ReportWriters every_report_writer() {
  ReportWriters writers;
  writers.add<JsonReportWriter>();
  writers.add<MarkdownReportWriter>();
  writers.add<HtmlReportWriter>();
  writers.add<GradebookCsvWriter>();
  writers.add<JunitXmlWriter>();
  writers.add<CanvasCsvWriter>();
  writers.add<GradescopeWriter>();
  writers.add<PrairieLearnWriter>();
  return writers;
}

void write_file(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

void write_run_reports(const Report& report, const std::vector<LabSpec>& labs, const std::string& dir) {
  every_report_writer().write_run({report, labs, dir});
}

void write_batch_outputs(const std::vector<Report>& reports, const std::vector<LabSpec>& labs,
                         const std::string& out_dir, const Roster& roster) {
  every_report_writer().write_batch({reports, labs, roster, report_file_names(reports), out_dir});
}

}  // namespace grade
