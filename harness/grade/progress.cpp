#include "progress.h"

#include <memory>
#include <set>
#include <variant>

namespace grade {

namespace protocol = labkit::protocol;

std::string lab_label(const LabSpec& lab) { return "lab " + lab.id + " " + lab.name; }

RecordHandler case_progress(LiveLine& live, const LabSpec& lab, std::size_t correctness_cases) {
  auto seen = std::make_shared<std::set<std::string>>();
  return [&live, &lab, correctness_cases, seen](const protocol::Record& record) {
    if (const auto* clock = std::get_if<protocol::ClockRecord>(&record); clock && !clock->counting)
      return live.show(lab_label(lab) + ": " + clock->why);
    const auto* progress = std::get_if<protocol::ProgressRecord>(&record);
    if (progress == nullptr) return;
    const std::string& name = progress->case_name;
    const std::string& stage = progress->stage;
    if (progress->kind == "correctness") {
      seen->insert(name);
      live.show(lab_label(lab) + ": case " + std::to_string(seen->size()) + " of " +
                std::to_string(correctness_cases) + " (" + name + ")");
    } else {
      live.show(lab_label(lab) + ": " + stage + " case " + name);
    }
  };
}

}  // namespace grade
