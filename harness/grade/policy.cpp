#include "policy.h"

#include "bad_input.h"
#include "labkit/dataset.h"
#include "runner_client.h"
#include "score.h"

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <fstream>
#include <set>

namespace fs = std::filesystem;

namespace grade::policy {

namespace {

// What the runner reported, rebuilt from a saved result: each case's outcome and message, and
// each timed case's measurement as it arrived.
Reports reports_of(const LabResult& recorded) {
  Reports reports;
  for (const CaseResult& c : recorded.cases) {
    if (c.kind == "correctness") {
      reports.correctness[c.name].push_back({c.name, c.outcome, c.message});
    } else if (c.outcome != Outcome::not_run) {
      const bool timed = c.timing.contains("ratio") && c.timing.value("output_ok", false);
      reports.performance[c.name].push_back({c.name, timed ? Outcome::passed : c.outcome, c.message, c.timing});
    }
  }
  return reports;
}

}  // namespace

fs::path record_path(const std::string& source_root, const std::string& tier, const LabSpec& lab) {
  return fs::path(source_root) / records_folder / tier / (lab.id + ".json");
}

std::optional<LabResult> recorded_run(const std::string& source_root, const std::string& tier, const LabSpec& lab) {
  std::ifstream file(record_path(source_root, tier, lab));
  if (!file) return std::nullopt;
  return lab_from_json(nlohmann::json::parse(file));
}

std::vector<Step> steps_of(const std::string& source_root, const LabSpec& lab) {
  const fs::path file = fs::path(source_root) / versions_file;
  if (!fs::exists(file)) return {};
  const YAML::Node entry = YAML::LoadFile(file.string())[lab.id];
  if (!entry || !entry["steps"]) return {};
  std::vector<Step> steps;
  for (const YAML::Node& node : entry["steps"]) {
    Step step;
    if (node["step"]) step.slug = node["step"].as<std::string>();
    if (node["name"]) step.name = node["name"].as<std::string>();
    if (node["rule"]) step.rule = node["rule"].as<std::string>();
    if (node["why"]) step.why = node["why"].as<std::string>();
    const std::string where = std::string(versions_file) + ", lab " + lab.id + ", step `" + step.slug + "`";
    if (step.slug.empty() || step.name.empty())
      throw BadInput(std::string(versions_file) + ", lab " + lab.id + ": each step needs `step:` (its folder) and `name:`");
    if (std::find(step_rules.begin(), step_rules.end(), step.rule) == step_rules.end())
      throw BadInput(where + ": `rule: " + step.rule + "` is none of bug-fixed, library, step, chapter, unranked");
    if (step.rule == "unranked" && step.why.empty())
      throw BadInput(where + ": `rule: unranked` needs `why:`, one sentence on why this GPU does not rank the step");
    steps.push_back(step);
  }
  return steps;
}

fs::path step_folder(const std::string& source_root, const LabSpec& lab, const Step& step) {
  return fs::path(source_root) / steps_folder / lab.dir / step.slug;
}

fs::path step_record_path(const std::string& source_root, const LabSpec& lab, const Step& step) {
  return fs::path(source_root) / records_folder / "steps" / lab.dir / (step.slug + ".json");
}

std::optional<LabResult> recorded_step(const std::string& source_root, const LabSpec& lab, const Step& step) {
  std::ifstream file(step_record_path(source_root, lab, step));
  if (!file) return std::nullopt;
  return lab_from_json(nlohmann::json::parse(file));
}

std::string record_mismatch(const LabSpec& lab, const LabResult& recorded) {
  const labkit::Dataset dataset = labkit::load_dataset(lab.dataset);
  std::size_t correctness = 0;
  for (const CaseResult& c : recorded.cases) correctness += c.kind == "correctness";
  if (correctness == dataset.correctness.size()) return "";
  return "the dataset has " + std::to_string(dataset.correctness.size()) + " correctness cases, the recorded run " +
         std::to_string(correctness) + ": grade the tiers again on the GPU (grading/policy/record.sh)";
}

std::vector<std::string> cases_awaiting_record(const LabSpec& lab, const LabResult& recorded) {
  const labkit::Dataset dataset = labkit::load_dataset(lab.dataset);
  std::set<std::string> in_record;
  for (const CaseResult& c : recorded.cases)
    if (c.kind == "correctness") in_record.insert(c.name);
  std::set<std::string> in_dataset;
  std::vector<std::string> awaiting;
  for (const labkit::Case& c : dataset.correctness) {
    in_dataset.insert(c.name);
    if (in_record.count(c.name) == 0) awaiting.push_back(c.name);
  }
  for (const std::string& name : in_record)
    if (in_dataset.count(name) == 0) return {};
  return awaiting;
}

LabResult rescored(const LabSpec& lab, const LabResult& recorded) {
  const labkit::Dataset dataset = labkit::load_dataset(lab.dataset);
  LabResult result{lab.id, lab.name, lab.title};
  result.device = recorded.device;
  const Reports reports = reports_of(recorded);
  score_correctness(lab, dataset, reports, "", result);
  score_performance(lab, reports, "not timed in the recorded run", result);
  add_totals(result);
  return result;
}

}  // namespace grade::policy
