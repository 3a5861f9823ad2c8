#include "report/gradescope.h"

#include "report/batch_rows.h"
#include "report/platform_text.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace grade {

std::optional<json> gradescope_results(const Report& report, const LabSpec& spec) {
  const LabResult* lab = asked_lab(report, spec);
  if (!lab || !judged_here(*lab)) return std::nullopt;
  const std::vector<CaseShare> shares = case_shares(*lab);
  json tests = json::array();
  for (std::size_t i = 0; i < lab->cases.size(); ++i) {
    const CaseResult& c = lab->cases[i];
    json test = {{"name", test_name(c)},
                 {"score", double(shares[i].score) / 100},
                 {"max_score", double(shares[i].max) / 100},
                 {"output", case_output(c)},
                 {"visibility", c.hidden ? "hidden" : "visible"}};
    // Gradescope knows only passed and failed: a case that did not run is neither, and its
    // output says why.
    if (c.ran()) test["status"] = c.passed() ? "passed" : "failed";
    tests.push_back(test);
  }
  return json{{"score", lab_points(*lab)}, {"output", lab_output(*lab)}, {"visibility", "visible"}, {"tests", tests}};
}

std::string gradescope_scores_csv(const std::vector<Report>& reports, const LabSpec& lab, const Roster& roster) {
  std::string csv = csv_row({"Name", "SID", "Email", "Total Score"});
  for (const Report& report : reports) {
    const Student student = student_of(roster, report.who);
    csv += csv_row({student.name.empty() ? report.who : student.name, student.student_id, student.email,
                    score_cell(asked_lab(report, lab))});
  }
  return csv;
}

// No results.json where the lab was not judged here: a missing file gives no score rather
// than a 0. An earlier run's file goes, from when the lab was judged.
void GradescopeWriter::write_batch(const BatchOutput& batch) {
  for (const LabSpec& spec : batch.labs) {
    write_file(batch.dir / "gradescope-scores" / (spec.dir + ".csv"),
               gradescope_scores_csv(batch.reports, spec, batch.roster));
    for (std::size_t i = 0; i < batch.reports.size(); ++i) {
      const fs::path results = batch.dir / "gradescope" / spec.dir / batch.file_names[i] / "results.json";
      if (const auto judged = gradescope_results(batch.reports[i], spec))
        write_file(results, json_text(*judged));
      else
        fs::remove(results);
    }
  }
}

}  // namespace grade
