#include "report/json_report.h"

namespace grade {

void JsonReportWriter::write_run(const RunOutput& run) {
  write_file((run.dir / run.report.who).string() + ".json", json_text(to_json(run.report)));
}

void JsonReportWriter::write_batch(const BatchOutput& batch) {
  for (std::size_t i = 0; i < batch.reports.size(); ++i)
    write_file(batch.dir / "students" / (batch.file_names[i] + ".json"), json_text(to_json(batch.reports[i])));
}

}  // namespace grade
