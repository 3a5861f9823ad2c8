// The grading policy (grading/policy/README.md), checked against what the GPU measured: each
// lab's unchanged starter, its chapter's technique done right and its reference solution were
// graded once on the GPU (grading/policy/h100/<tier>/<lab>.json, what the grader saved), and
// are scored again here under today's lab.yaml (policy.h). A rubric or dataset change that
// lifts a starter above 30, or takes a reference below full marks, fails here, without a GPU.
// So do the steps versions.yaml lists (the planted bug fixed alone, the library baseline, each
// intermediate step a README teaches, the chapter in other forms, and the steps this GPU does
// not rank in the lesson's order; grading/policy/steps/), each by its rule, once it has a record.
#include "catalog.h"
#include "policy.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <set>

namespace {

constexpr double starter_at_most = 30;
constexpr double chapter_at_least = 70, chapter_at_most = 85;
constexpr double reference_at_least = 99.5;

// A record made before the dataset gained a part's cases: named in a warning, as a step not
// recorded yet is, and neither checked nor failed until the tiers are recorded again (the new
// cases have no outcome to score). True when it warned.
bool warned_awaiting_record(const grade::LabSpec& lab, const grade::LabResult& recorded, const std::string& what) {
  const std::vector<std::string> awaiting = grade::policy::cases_awaiting_record(lab, recorded);
  if (awaiting.empty()) return false;
  std::string names;
  for (const std::string& name : awaiting) names += (names.empty() ? "" : ", ") + name;
  WARN_MESSAGE(false, "lab " << lab.id << ", " << what << ": recorded before its dataset gained " << awaiting.size()
                             << " correctness cases (" << names << "): nothing checks what it earns until it is "
                             << "recorded again (on a GPU: grading/policy/record.sh OUT " << lab.id
                             << ", then copy OUT/h100/ over grading/policy/h100/)");
  return true;
}

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
      if (warned_awaiting_record(lab, *recorded, "tier " + std::string(tier))) continue;
      const std::string problem = grade::policy::record_mismatch(lab, *recorded);
      CHECK_MESSAGE(problem.empty(), problem);
      if (!problem.empty()) continue;
      const double points = grade::policy::rescored(lab, *recorded).points;
      // 0.05: shares of the correctness points can add up to 30.000001.
      if (tier == "starter") CHECK_MESSAGE(points <= starter_at_most + 0.05, "the unchanged starter earns " << points);
      if (tier == "reference") CHECK_MESSAGE(points >= reference_at_least, "the reference earns " << points);
      if (tier == "chapter")
        CHECK_MESSAGE((points >= chapter_at_least && points <= chapter_at_most),
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

// A step written on a machine without a GPU has no record until one is lent: it is named in a
// warning on every run (WARN: visible in the test's output, not a failure), so that it is
// neither taken as checked nor a reason for CI to fail before anyone could record it. Once its
// record is there, its rule is checked like the tiers above.
TEST_CASE("each lab's steps earn what their rule in versions.yaml says, once recorded") {
  namespace fs = std::filesystem;
  const std::string root = LABKIT_TEST_SOURCE_ROOT;
  for (const grade::LabSpec& lab : grade::load_catalog(root)) {
    CAPTURE(lab.dir);
    const std::vector<grade::policy::Step> steps = grade::policy::steps_of(root, lab);
    const auto points_of = [&](const std::optional<grade::LabResult>& recorded) -> std::optional<double> {
      if (!recorded || !grade::policy::record_mismatch(lab, *recorded).empty()) return std::nullopt;
      return grade::policy::rescored(lab, *recorded).points;
    };
    const std::optional<double> starter = points_of(grade::policy::recorded_run(root, "starter", lab));
    const std::optional<double> chapter = points_of(grade::policy::recorded_run(root, "chapter", lab));
    const std::optional<double> reference = points_of(grade::policy::recorded_run(root, "reference", lab));
    // The rung the next bug-fixed or step version must beat: the starter, then each one recorded.
    std::optional<double> rung = starter;
    std::string rung_name = "the starter";
    for (const grade::policy::Step& step : steps) {
      CAPTURE(step.slug);
      // The step's files: one student's files of this lab, nothing else.
      const fs::path folder = grade::policy::step_folder(root, lab, step);
      CHECK_MESSAGE(fs::is_directory(folder), "versions.yaml lists the step, but " << folder.string() << " is missing");
      std::size_t files = 0;
      if (fs::is_directory(folder))
        for (const auto& entry : fs::directory_iterator(folder)) {
          ++files;
          const std::string name = entry.path().filename().string();
          CHECK_MESSAGE(std::count(lab.student_files.begin(), lab.student_files.end(), name) == 1,
                        entry.path().string() << " is not one of the lab's student files");
        }
      CHECK_MESSAGE(files > 0, folder.string() << " holds no student file");

      const auto recorded = grade::policy::recorded_step(root, lab, step);
      if (!recorded) {
        WARN_MESSAGE(false, "lab " << lab.id << ", step `" << step.slug << "` (" << step.name
                                   << ") is not recorded yet: nothing checks what it earns until "
                                   << grade::policy::step_record_path(root, lab, step).string()
                                   << " exists (on a GPU: TIERS=steps grading/policy/record.sh OUT " << lab.id
                                   << ", then copy OUT/h100/steps/ over grading/policy/h100/steps/)");
        continue;
      }
      if (warned_awaiting_record(lab, *recorded, "step `" + step.slug + "`")) continue;
      const std::string problem = grade::policy::record_mismatch(lab, *recorded);
      CHECK_MESSAGE(problem.empty(), problem);
      if (!problem.empty()) continue;
      const double points = grade::policy::rescored(lab, *recorded).points;
      CHECK_MESSAGE(points > starter_at_most + 0.05, "`" << step.slug << "` earns " << points
                                                          << ", no more than the starter's cap of " << starter_at_most);
      if (starter)
        CHECK_MESSAGE(points > *starter, "`" << step.slug << "` earns " << points << ", no more than the starter's "
                                             << *starter);
      if (step.rule == "bug-fixed" || step.rule == "library") {
        if (chapter)
          CHECK_MESSAGE(points < *chapter, "`" << step.slug << "` (" << step.rule << ") earns " << points
                                               << ", not less than the chapter's technique (" << *chapter << ")");
      }
      if (step.rule == "step" && chapter)
        CHECK_MESSAGE(points <= *chapter + 0.05, "`" << step.slug << "` earns " << points
                                                     << ", more than the chapter's technique (" << *chapter << ")");
      if (step.rule == "bug-fixed" || step.rule == "step") {
        if (rung)
          CHECK_MESSAGE(points > *rung, "`" << step.slug << "` earns " << points << ", no more than " << rung_name
                                            << " before it (" << *rung << "): each step must earn its own points");
        rung = points;
        rung_name = "`" + step.slug + "`";
      }
      // A step this GPU does not rank (versions.yaml's `why:` says why): more than the starter,
      // as above, and no more than the reference; it is no rung for the steps after it.
      if (step.rule == "unranked" && reference)
        CHECK_MESSAGE(points <= *reference + 0.05, "`" << step.slug << "` (unranked: " << step.why << ") earns " << points
                                                       << ", more than the reference (" << *reference << ")");
      if (step.rule == "chapter")
        CHECK_MESSAGE((points >= chapter_at_least && points <= chapter_at_most),
                      "`" << step.slug << "`, the chapter's technique in another form, earns " << points << ", not "
                          << chapter_at_least << "-" << chapter_at_most);
    }
  }
}

TEST_CASE("every folder under grading/policy/steps/ is a step versions.yaml lists, of a lab the kit has") {
  namespace fs = std::filesystem;
  const std::string root = LABKIT_TEST_SOURCE_ROOT;
  const fs::path steps_root = fs::path(root) / grade::policy::steps_folder;
  if (!fs::is_directory(steps_root)) return;
  std::map<std::string, std::set<std::string>> listed;  // lab folder -> its steps' slugs
  for (const grade::LabSpec& lab : grade::load_catalog(root))
    for (const grade::policy::Step& step : grade::policy::steps_of(root, lab)) listed[lab.dir].insert(step.slug);
  for (const auto& lab_folder : fs::directory_iterator(steps_root)) {
    if (!lab_folder.is_directory()) continue;  // README.md and the like
    const std::string lab = lab_folder.path().filename().string();
    const auto found = listed.find(lab);
    CHECK_MESSAGE(found != listed.end(), lab_folder.path().string() << ": no lab " << lab
                                                                     << " lists steps in grading/policy/versions.yaml");
    if (found == listed.end()) continue;
    for (const auto& step_folder : fs::directory_iterator(lab_folder.path()))
      CHECK_MESSAGE(found->second.count(step_folder.path().filename().string()) == 1,
                    step_folder.path().string() << " is not a step of lab " << lab << " in grading/policy/versions.yaml");
  }
}
