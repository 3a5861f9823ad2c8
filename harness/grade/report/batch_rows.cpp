#include "report/batch_rows.h"

#include "intake.h"

#include <algorithm>

namespace grade {

namespace {

// A lab not handed in says so in three words: in a class's batch there are many, each naming
// its own file. Any other lab not graded gives its report's reason.
std::string reason_in_gradebook(const LabResult& lab, const LabSpec& spec) {
  if (not_handed_in(lab, spec)) return "not handed in";
  return not_graded_reason(lab);
}

}  // namespace

const LabResult* asked_lab(const Report& report, const LabSpec& spec) {
  for (const LabResult& lab : report.labs)
    if (lab.id == spec.id) return &lab;
  return nullptr;
}

std::vector<const LabResult*> asked_labs(const Report& report, const std::vector<LabSpec>& labs) {
  std::vector<const LabResult*> asked;
  for (const LabSpec& spec : labs)
    if (const LabResult* lab = asked_lab(report, spec)) asked.push_back(lab);
  return asked;
}

std::string score_cell(const LabResult* lab) {
  return lab && judged_here(*lab) ? points_figure(lab_points(*lab)) : "";
}

std::string total_cell(const Total& total) { return total.judged() ? points_figure(total.points) : ""; }

std::vector<LabsWithReason> not_graded_reasons(const Report& report, const std::vector<LabSpec>& labs) {
  std::vector<LabsWithReason> reasons;
  for (const LabSpec& spec : labs) {
    const LabResult* lab = asked_lab(report, spec);
    const std::string reason = lab ? reason_in_gradebook(*lab, spec) : "";
    if (reason.empty()) continue;
    const auto same = std::find_if(reasons.begin(), reasons.end(), [&](const auto& r) { return r.reason == reason; });
    if (same == reasons.end())
      reasons.push_back({{lab->id}, reason});
    else
      same->ids.push_back(lab->id);
  }
  return reasons;
}

std::string labs_named(const LabsWithReason& labs) { return id_ranges(labs.ids); }

}  // namespace grade
