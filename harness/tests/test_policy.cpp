// The grading policy (grading/policy/README.md), checked against what the GPU measured: each
// lab's unchanged starter, its chapter's technique done right and its reference solution were
// graded once on the GPU (grading/policy/h100/<tier>/<lab>.json, what the grader saved), and
// are scored again here under today's lab.yaml (policy.h). A rubric or dataset change that
// lifts a starter above 30, or takes a reference below full marks, fails here, without a GPU.
#include "catalog.h"
#include "policy.h"

#include <doctest/doctest.h>

#include <map>

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

}  // namespace

TEST_CASE("each lab's rubric gives its starter, its chapter and its reference what the policy says") {
  for (const grade::LabSpec& lab : grade::load_catalog(LABKIT_TEST_SOURCE_ROOT)) {
    CAPTURE(lab.dir);
    for (const std::string tier : grade::policy::tiers) {
      CAPTURE(tier);
      const auto recorded = grade::policy::recorded_run(LABKIT_TEST_SOURCE_ROOT, tier, lab);
      if (!recorded) {
        // Labs on more than one GPU wait for a machine with two; every other lab is recorded.
        CHECK_MESSAGE(lab.min_gpus > 1, "no recorded run at "
                                            << grade::policy::record_path(LABKIT_TEST_SOURCE_ROOT, tier, lab).string());
        continue;
      }
      const std::string problem = grade::policy::record_mismatch(lab, *recorded);
      CHECK_MESSAGE(problem.empty(), problem);
      if (!problem.empty()) continue;
      const double points = grade::policy::rescored(lab, *recorded).points;
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
