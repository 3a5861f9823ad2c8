#include "report/prairielearn.h"

#include "report/batch_rows.h"
#include "report/platform_text.h"

#include <algorithm>

using nlohmann::json;

namespace grade {

json prairielearn_results(const Report& report, const LabSpec& spec) {
  const LabResult* lab = asked_lab(report, spec);
  if (!lab || !judged_here(*lab))
    return {{"gradable", false},
            {"message", "not judged here (no GPU, too few GPUs, or a fault of the kit): not graded"},
            {"output", lab ? lab_output(*lab) : ""},
            {"tests", json::array()}};
  const std::vector<CaseShare> shares = case_shares(*lab);
  json tests = json::array();
  for (std::size_t i = 0; i < lab->cases.size(); ++i) {
    const CaseResult& c = lab->cases[i];
    tests.push_back({{"name", test_name(c)},
                     {"description", lab->title + ": a " + c.kind + " case" + (c.hidden ? " (hidden)" : "")},
                     {"points", double(shares[i].score) / 100},
                     {"max_points", double(shares[i].max) / 100},
                     {"message", c.passed() ? "passed" : c.ran() ? "failed" : "not run"},
                     {"output", case_output(c)}});
  }
  const double max = lab->max_points;
  return {{"gradable", true},
          {"score", max > 0 ? std::clamp(lab_points(*lab) / max, 0.0, 1.0) : 0.0},
          {"message", points_line(*lab)},
          {"output", lab_output(*lab)},
          {"tests", tests}};
}

void PrairieLearnWriter::write_batch(const BatchOutput& batch) {
  for (const LabSpec& spec : batch.labs)
    for (std::size_t i = 0; i < batch.reports.size(); ++i)
      write_file(batch.dir / "prairielearn" / spec.dir / batch.file_names[i] / "results.json",
                 json_text(prairielearn_results(batch.reports[i], spec)));
}

}  // namespace grade
