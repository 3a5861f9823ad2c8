#include "report/canvas_csv.h"

#include "report/batch_rows.h"

namespace grade {

namespace {

std::string lab_column(const LabSpec& spec) { return "Lab " + spec.id + " " + spec.name; }

}  // namespace

std::string canvas_csv(const std::vector<Report>& reports, const std::vector<LabSpec>& labs, const Roster& roster) {
  std::vector<std::string> header = {"Student", "ID", "SIS User ID", "SIS Login ID", "Section"};
  std::vector<std::string> points_possible = {"Points Possible", "", "", "", ""};
  for (const LabSpec& spec : labs) {
    header.push_back(lab_column(spec));
    points_possible.push_back(points_figure(max_points(spec)));
  }
  std::string csv = csv_row(header) + csv_row(points_possible);
  for (const Report& report : reports) {
    const Student student = student_of(roster, report.who);
    // Canvas matches a row on its ID, then the SIS ids; the name is for the reader.
    std::vector<std::string> row = {student.name.empty() ? report.who : student.name, "", student.student_id,
                                    student.email, ""};
    for (const LabSpec& spec : labs) row.push_back(score_cell(asked_lab(report, spec)));
    csv += csv_row(row);
  }
  return csv;
}

void CanvasCsvWriter::write_batch(const BatchOutput& batch) {
  write_file(batch.dir / "canvas-import.csv", canvas_csv(batch.reports, batch.labs, batch.roster));
}

}  // namespace grade
