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

#include <algorithm>
#include <fstream>
#include <map>

namespace fs = std::filesystem;

namespace grade {

void ReportWriters::write_run(const RunOutput& run) {
  for (const auto& writer : writers_) writer->write_run(run);
}

void ReportWriters::write_batch(const BatchOutput& batch) {
  for (const auto& writer : writers_) writer->write_batch(batch);
}

std::vector<BatchFile> ReportWriters::batch_files() const {
  std::vector<BatchFile> files;
  for (const auto& writer : writers_)
    for (const BatchFile& file : writer->batch_files())
      if (std::none_of(files.begin(), files.end(), [&](const BatchFile& f) { return f.name == file.name; }))
        files.push_back(file);
  return files;
}

std::string batch_files_line(const fs::path& dir) {
  std::map<BatchFile::For, std::vector<std::string>> names;
  for (const BatchFile& file : every_report_writer().batch_files()) names[file.audience].push_back(file.name);
  const auto listed = [&](BatchFile::For audience) {
    std::string text;
    for (const std::string& name : names[audience]) text += (text.empty() ? "" : ", ") + name;
    return text;
  };
  std::string line = "Gradebook: " + (dir / listed(BatchFile::For::gradebook)).string();
  if (!names[BatchFile::For::students].empty()) line += "; to hand back: " + listed(BatchFile::For::students);
  if (!names[BatchFile::For::platforms].empty())
    line += "; for course platforms, a file per lab or a column per lab: " + listed(BatchFile::For::platforms);
  if (!names[BatchFile::For::instructor].empty()) line += "; also " + listed(BatchFile::For::instructor);
  return line;
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
