#include "report/gradebook_csv.h"

#include "report/batch_rows.h"

namespace grade {

std::string gradebook_csv(const std::vector<Report>& reports, const std::vector<LabSpec>& labs, const Roster& roster) {
  std::vector<std::string> header = {"student"};
  if (!roster.empty()) header.insert(header.end(), {"student_id", "name", "email"});
  for (const LabSpec& lab : labs) header.push_back("lab" + lab.id + "-" + lab.name);
  header.insert(header.end(), {"total", "max", "secret", "notes"});
  std::string csv = csv_row(header);
  for (const Report& report : reports) {
    std::vector<std::string> row = {report.who};
    if (!roster.empty()) {
      const Student student = student_of(roster, report.who);
      row.insert(row.end(), {student.student_id, student.name, student.email});
    }
    for (const LabSpec& spec : labs) row.push_back(score_cell(asked_lab(report, spec)));
    std::string notes;
    for (const LabsWithReason& labs_with : not_graded_reasons(report, labs))
      notes += (notes.empty() ? "" : "; ") + labs_named(labs_with) + ": " + labs_with.reason;
    const Total total = total_of(asked_labs(report, labs));
    row.insert(row.end(),
               {total_cell(total), points_figure(total.max_points), report.secret_used ? "yes" : "no", notes});
    csv += csv_row(row);
  }
  return csv;
}

void GradebookCsvWriter::write_batch(const BatchOutput& batch) {
  write_file(batch.dir / "gradebook.csv", gradebook_csv(batch.reports, batch.labs, batch.roster));
}

}  // namespace grade
