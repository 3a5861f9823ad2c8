// The grading policy (grading/policy/README.md), checked against what the H100 measured: each
// lab's unchanged starter, its chapter's technique done right and its reference solution were
// graded once on the GPU (grading/policy/h100/<tier>/<lab>.json, what the grader saved), and
// are scored again here under today's lab.yaml. A rubric or dataset change that lifts a
// starter above 30, or takes a reference below full marks, fails here, without a GPU.
#include "catalog.h"
#include "model.h"
#include "score.h"

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>

namespace fs = std::filesystem;
namespace protocol = labkit::protocol;
using nlohmann::json;

namespace {

constexpr double starter_at_most = 30;
constexpr double chapter_at_least = 70, chapter_at_most = 85;
constexpr double reference_at_least = 99.5;

// Where the chapter's own technique already reaches what the lab measures, it may earn full
// marks; each exception says why (and grading/policy/README.md repeats it).
const std::map<std::string, std::string> chapter_may_reach_full_marks = {
    {"11", "the chapter's 16 chunks on four streams already overlap copies and kernel, and come within "
           "a few percent of the reference's time: closer than a timed ratio can fairly tell apart"},
};

fs::path measured_file(const std::string& tier, const grade::LabSpec& lab) {
  return fs::path(LABKIT_TEST_SOURCE_ROOT) / "grading" / "policy" / "h100" / tier / (lab.id + ".json");
}

// What the runner reported, rebuilt from a saved result: each case's outcome and message, and
// each timed case's measurement as it arrived.
grade::Reports reports_of(const grade::LabResult& measured) {
  grade::Reports reports;
  for (const grade::CaseResult& c : measured.cases) {
    if (c.kind == "correctness") {
      reports.correctness[c.name].push_back({c.name, c.outcome, c.message});
    } else if (c.outcome != protocol::Outcome::not_run) {
      const bool timed = c.timing.contains("ratio") && c.timing.value("output_ok", false);
      reports.performance[c.name].push_back(
          {c.name, timed ? protocol::Outcome::passed : c.outcome, c.message, c.timing});
    }
  }
  return reports;
}

// The measured run scored under the lab's rubric as it is now.
grade::LabResult rescored(const grade::LabSpec& lab, const grade::LabResult& measured) {
  const labkit::Dataset dataset = labkit::load_dataset(lab.dataset);
  grade::LabResult result{lab.id, lab.name, lab.title};
  const grade::Reports reports = reports_of(measured);
  grade::score_correctness(lab, dataset, reports, "", result);
  grade::score_performance(lab, reports, "not timed in the measured run", result);
  grade::add_totals(result);
  return result;
}

// The measured run, or nothing (with why) for a lab whose machine was not lent.
std::optional<grade::LabResult> measured_run(const std::string& tier, const grade::LabSpec& lab) {
  std::ifstream file(measured_file(tier, lab));
  if (!file) return std::nullopt;
  return grade::lab_from_json(json::parse(file));
}

std::string same_cases(const grade::LabSpec& lab, const grade::LabResult& measured) {
  const labkit::Dataset dataset = labkit::load_dataset(lab.dataset);
  std::size_t correctness = 0;
  for (const grade::CaseResult& c : measured.cases) correctness += c.kind == "correctness";
  if (correctness != dataset.correctness.size())
    return "the dataset has " + std::to_string(dataset.correctness.size()) + " correctness cases, the measured run " +
           std::to_string(correctness) + ": grade the tiers again on the GPU (grading/policy/record.sh)";
  return "";
}

}  // namespace

TEST_CASE("each lab's rubric gives its starter, its chapter and its reference what the policy says") {
  for (const grade::LabSpec& lab : grade::load_catalog(LABKIT_TEST_SOURCE_ROOT)) {
    CAPTURE(lab.dir);
    for (const std::string tier : {"starter", "chapter", "reference"}) {
      CAPTURE(tier);
      const auto measured = measured_run(tier, lab);
      if (!measured) {
        // Labs on more than one GPU wait for a machine with two; every other lab is measured.
        CHECK_MESSAGE(lab.min_gpus > 1, "no measured run at " << measured_file(tier, lab).string());
        continue;
      }
      const std::string problem = same_cases(lab, *measured);
      CHECK_MESSAGE(problem.empty(), problem);
      if (!problem.empty()) continue;
      const double points = rescored(lab, *measured).points;
      // 0.05: shares of the correctness points can add up to 30.000001.
      if (tier == "starter") CHECK_MESSAGE(points <= starter_at_most + 0.05, "the unchanged starter earns " << points);
      if (tier == "reference") CHECK_MESSAGE(points >= reference_at_least, "the reference earns " << points);
      const bool may_reach_full = chapter_may_reach_full_marks.count(lab.id) > 0;
      if (tier == "chapter")
        CHECK_MESSAGE((points >= chapter_at_least && (points <= chapter_at_most || may_reach_full)),
                      "the chapter's technique earns " << points << ", not " << chapter_at_least << "-"
                                                       << chapter_at_most);
    }
  }
}

// Where the lesson is a property a correct answer can lack (labs 11 and 12: their checks give
// no speed points to a call without it), a correct starter earns the correctness points and
// nothing more: so they must stay within the starter's cap, measured run or not (lab 12's
// needs two GPUs).
TEST_CASE("labs whose lesson is a timed property keep their correctness points within the starter's cap") {
  const std::map<std::string, std::string> property_of = {
      {"11", "copies and kernel overlap"},
      {"12", "the work is split over the GPUs"},
  };
  for (const grade::LabSpec& lab : grade::load_catalog(LABKIT_TEST_SOURCE_ROOT)) {
    const auto property = property_of.find(lab.id);
    if (property == property_of.end()) continue;
    CAPTURE(lab.dir);
    CHECK_MESSAGE(lab.correctness_points <= starter_at_most,
                  "a correct call without the lesson's property (" << property->second << ") would earn "
                                                                   << lab.correctness_points);
  }
}
