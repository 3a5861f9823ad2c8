// The red team's expected verdicts (expect.h) cannot pass while checking nothing.
#include "expect.h"

#include "bad_input.h"
#include "catalog.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;

namespace {

// A submissions folder with one submission per entry: its name and its expected.yaml (none
// when empty).
fs::path submissions(const std::vector<std::pair<std::string, std::string>>& entries) {
  const fs::path base = fs::temp_directory_path() / "labkit-test-expect";
  fs::remove_all(base);
  for (const auto& [who, expected] : entries) {
    fs::create_directories(base / who);
    if (!expected.empty()) std::ofstream(base / who / "expected.yaml") << expected;
  }
  return base;
}

grade::Report graded(const std::string& who, const std::string& lab_id, bool passed) {
  grade::LabResult lab{lab_id, "histogram", "Histogram"};
  grade::CaseResult c{"a", "correctness"};
  c.outcome = passed ? grade::Outcome::passed : grade::Outcome::failed;
  lab.cases = {c};
  return grade::Report{who, "student files", {lab}};
}

const std::vector<std::string> known = {"01", "02"};

}  // namespace

TEST_SUITE("expected verdicts") {
  TEST_CASE("a submission's expectation is checked") {
    const fs::path base = submissions({{"wrong", "labs:\n  \"01\": {status: graded, correctness: none}\n"}});
    const grade::ExpectationCheck check = grade::check_expectations({graded("wrong", "01", false)}, base, known);
    CHECK(check.errors.empty());
    CHECK(check.checked == 1);
    CHECK(check.mismatches.empty());
    const grade::ExpectationCheck passing = grade::check_expectations({graded("wrong", "01", true)}, base, known);
    CHECK(passing.mismatches.size() == 1);
  }

  TEST_CASE("a submission without expected.yaml is an error, not skipped") {
    const fs::path base = submissions({{"forgotten", ""}});
    const grade::ExpectationCheck check = grade::check_expectations({graded("forgotten", "01", true)}, base, known);
    REQUIRE(check.errors.size() == 1);
    CHECK(check.errors[0].find("forgotten has no expected.yaml") != std::string::npos);
  }

  TEST_CASE("a lab key the grader does not know is an error, not skipped") {
    const fs::path base = submissions({{"unquoted", "labs:\n  1: {status: graded, correctness: none}\n"}});
    const grade::ExpectationCheck check = grade::check_expectations({graded("unquoted", "01", false)}, base, known);
    REQUIRE(check.errors.size() == 1);
    CHECK(check.errors[0].find("names lab \"1\", which the grader does not know") != std::string::npos);
    CHECK(check.checked == 0);
  }

  TEST_CASE("an expected.yaml that names no lab is an error") {
    const fs::path base = submissions({{"empty", "why: forgot the labs\n"}});
    const grade::ExpectationCheck check = grade::check_expectations({graded("empty", "01", true)}, base, known);
    REQUIRE(check.errors.size() == 1);
    CHECK(check.errors[0].find("names no lab") != std::string::npos);
  }

  TEST_CASE("a known lab that this run did not grade is left out") {
    const fs::path base = submissions({{"other", "labs:\n  \"02\": {status: graded}\n"}});
    const grade::ExpectationCheck check = grade::check_expectations({graded("other", "01", true)}, base, known);
    CHECK(check.errors.empty());
    CHECK(check.checked == 0);
  }

  TEST_CASE("an entry that hands in the kit's files of every lab must expect something of each lab") {
    const fs::path base = submissions({{"starters", "files: starter\nlabs:\n  \"01\": {status: graded}\n"},
                                       {"own", "labs:\n  \"01\": {status: graded}\n"}});
    const grade::ExpectationCheck check = grade::check_expectations(
        {graded("starters", "01", true), graded("own", "01", true)}, base, known);
    REQUIRE(check.errors.size() == 1);
    CHECK(check.errors[0].find("starters/expected.yaml hands in the kit's starter files of every lab but expects "
                               "nothing of lab(s) 02") != std::string::npos);
    CHECK(check.checked == 2);  // the labs it names are still checked
    CHECK(grade::expectation_problems((base / "own" / "expected.yaml").string(), known).empty());
  }

  TEST_CASE("every red-team entry expects something of each lab of the catalog it hands in") {
    std::vector<std::string> lab_ids;
    for (const grade::LabSpec& lab : grade::load_catalog(LABKIT_TEST_SOURCE_ROOT)) lab_ids.push_back(lab.id);
    std::size_t files = 0;
    for (const auto& corpus : fs::directory_iterator(fs::path(LABKIT_TEST_SOURCE_ROOT) / "grading" / "redteam")) {
      if (!corpus.is_directory()) continue;
      for (const auto& entry : fs::directory_iterator(corpus.path())) {
        const fs::path file = entry.path() / "expected.yaml";
        if (!fs::exists(file)) continue;
        ++files;
        for (const std::string& problem : grade::expectation_problems(file.string(), lab_ids)) FAIL_CHECK(problem);
      }
    }
    CHECK(files > 20);
  }

  TEST_CASE("an entry that hands in the kit's starters or references is graded from the kit's own files") {
    const fs::path base = submissions({{"starters", "files: starter\nlabs:\n  \"01\": {status: graded}\n"},
                                       {"references", "files: reference\nlabs:\n  \"01\": {status: graded}\n"},
                                       {"own", "labs:\n  \"01\": {status: graded}\n"}});
    std::vector<grade::Submission> class_ = grade::find_submissions(base.string());
    grade::use_kit_files(class_, "/kit", "/unused");
    REQUIRE(class_.size() == 3);
    CHECK(class_[0].base == (base / "own").string());
    CHECK(class_[1].base == "/kit/solutions");
    CHECK(class_[2].base == "/kit");
  }

  TEST_CASE("an unknown `files:` is bad input, not an entry graded from nothing") {
    const fs::path base = submissions({{"typo", "files: starters\nlabs:\n  \"01\": {status: graded}\n"}});
    std::vector<grade::Submission> class_ = grade::find_submissions(base.string());
    CHECK_THROWS_WITH_AS(grade::use_kit_files(class_, "/kit", "/unused"), doctest::Contains("files: starters"),
                         std::invalid_argument);
  }

  TEST_CASE("an entry may take the parts it does not attack from the kit") {
    const fs::path kit = fs::temp_directory_path() / "labkit-test-kit";
    fs::remove_all(kit);
    fs::create_directories(kit / "solutions" / "13-allreduce");
    std::ofstream(kit / "solutions" / "13-allreduce" / "mpi_allreduce.cu") << "// the reference's part 2\n";
    const fs::path base = submissions(
        {{"part-1-only", "files: {mpi_allreduce.cu: reference}\nlabs:\n  \"13\": {status: graded}\n"}});
    std::ofstream(base / "part-1-only" / "allreduce.cu") << "// the entry's own part 1\n";
    std::vector<grade::Submission> class_ = grade::find_submissions(base.string());
    const fs::path staging = fs::temp_directory_path() / "labkit-test-staging";
    grade::use_kit_files(class_, kit.string(), staging.string());
    REQUIRE(class_.size() == 1);
    CHECK(class_[0].base == (staging / "part-1-only").string());
    CHECK(fs::exists(staging / "part-1-only" / "allreduce.cu"));
    CHECK(fs::exists(staging / "part-1-only" / "mpi_allreduce.cu"));
    fs::create_directories(kit / "grading" / "policy" / "chapter" / "13-allreduce");
    std::ofstream(kit / "grading" / "policy" / "chapter" / "13-allreduce" / "allreduce.cu") << "// the chapter's\n";
    const fs::path twin = submissions({{"twin", "files: {allreduce.cu: chapter}\nlabs:\n  \"13\": {}\n"}});
    std::vector<grade::Submission> twins = grade::find_submissions(twin.string());
    grade::use_kit_files(twins, kit.string(), staging.string());
    CHECK(fs::exists(staging / "twin" / "allreduce.cu"));
    fs::create_directories(kit / "grading" / "policy" / "steps" / "13-allreduce" / "one-copy");
    std::ofstream(kit / "grading" / "policy" / "steps" / "13-allreduce" / "one-copy" / "allreduce.cu") << "// a step\n";
    const fs::path stepped = submissions({{"step-twin", "files: {allreduce.cu: step one-copy}\nlabs:\n  \"13\": {}\n"}});
    std::vector<grade::Submission> step_twins = grade::find_submissions(stepped.string());
    grade::use_kit_files(step_twins, kit.string(), staging.string());
    CHECK(std::ifstream(staging / "step-twin" / "allreduce.cu").get() == '/');
    const fs::path unknown = submissions({{"typo", "files: {mpi_allreduce.cu: starter}\nlabs: {}\n"}});
    std::vector<grade::Submission> typo = grade::find_submissions(unknown.string());
    CHECK_THROWS_AS(grade::use_kit_files(typo, kit.string(), staging.string()), grade::BadInput);
  }

  TEST_CASE("every attack names the defences whose switching-off lets it win") {
    const fs::path base = submissions({
        {"twin", "honest: true\nlabs:\n  \"01\": {status: graded}\n"},
        {"live", "labs:\n  \"01\": {points_at_most: 62}\nundefended:\n  defences: [robust-noise, "
                 "sample-confirmation]\n  labs:\n    \"01\": {points_at_least: 90}\n"},
        {"unproven", "labs:\n  \"01\": {points_at_most: 62}\n"},
    });
    std::vector<grade::Submission> entries;
    for (const char* who : {"twin", "live", "unproven"}) entries.push_back({who, (base / who).string(), ""});
    std::vector<std::string> problems;
    const auto groups = grade::group_by_undefended(entries, problems);
    REQUIRE(groups.size() == 1);
    CHECK(groups.begin()->first == "robust-noise,sample-confirmation");
    CHECK(groups.begin()->second.at(0).who == "live");
    REQUIRE(problems.size() == 1);
    CHECK(problems[0].find("unproven") != std::string::npos);
    // The undefended block is what such a run checks.
    const grade::ExpectationCheck won = grade::check_expectations({graded("live", "01", true)}, base, known, true);
    CHECK(won.checked == 1);
    CHECK(won.mismatches.size() == 1);  // scored 0, expected at least 90
  }

  TEST_CASE("a misspelt defence is bad input") {
    const fs::path base = submissions({{"typo", "labs:\n  \"01\": {}\nundefended:\n  defences: [fresh-input]\n"}});
    std::vector<std::string> problems;
    CHECK_THROWS_AS(grade::group_by_undefended({{"typo", (base / "typo").string(), ""}}, problems), grade::BadInput);
  }

  TEST_CASE("every timing entry of the red team is an honest twin or names what its attack defeats") {
    const fs::path corpus = fs::path(LABKIT_TEST_SOURCE_ROOT) / "grading" / "redteam" / "timing";
    std::vector<grade::Submission> entries;
    for (const auto& entry : fs::directory_iterator(corpus))
      if (entry.is_directory()) entries.push_back({entry.path().filename().string(), entry.path().string(), ""});
    std::vector<std::string> problems;
    const auto groups = grade::group_by_undefended(entries, problems);
    for (const std::string& problem : problems) MESSAGE(problem);
    CHECK(problems.empty());
    CHECK(groups.size() >= 5);
  }
}
