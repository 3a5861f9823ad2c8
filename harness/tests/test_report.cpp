#include "model.h"

#include <doctest/doctest.h>

namespace {
grade::Report sample_report() {
  grade::LabResult lab{"01", "histogram", "Histogram"};
  grade::CaseResult pass{"a", "correctness"};
  pass.outcome = grade::Outcome::passed;
  pass.points = pass.max_points = 30;
  grade::CaseResult hidden_fail{"b", "correctness", true};
  hidden_fail.outcome = grade::Outcome::failed;
  hidden_fail.message = "bin 3 expected 4, got 5";
  hidden_fail.max_points = 30;
  grade::CaseResult perf{"p", "performance"};
  perf.max_points = 40;
  perf.message = "no result";
  lab.cases = {pass, hidden_fail, perf};
  grade::add_totals(lab);
  grade::Report report{"alice", "student files", {lab}};
  grade::add_totals(report);
  return report;
}
}  // namespace

TEST_SUITE("report") {
  TEST_CASE("totals add up per lab and overall") {
    const auto report = sample_report();
    CHECK(report.labs[0].points == 30);
    CHECK(report.labs[0].max_points == 100);
    CHECK(report.points == 30);
    CHECK(report.max_points == 100);
  }

  TEST_CASE("JSON has the shape the exports read") {
    const auto json = grade::to_json(sample_report());
    CHECK(json["who"] == "alice");
    CHECK(json["points"] == 30);
    REQUIRE(json["labs"].size() == 1);
    const auto& lab = json["labs"][0];
    for (const char* key : {"id", "name", "title", "status", "note", "points", "max_points", "cases", "build_log"})
      CHECK_MESSAGE(lab.contains(key), key);
    CHECK(lab["status"] == "graded");
    for (const char* key : {"name", "kind", "hidden", "ran", "passed", "outcome", "message", "points", "max_points"})
      CHECK_MESSAGE(lab["cases"][0].contains(key), key);
    CHECK(lab["cases"][0]["outcome"] == "passed");
    CHECK(lab["cases"][1]["outcome"] == "failed");
    CHECK(lab["cases"][2]["outcome"] == "not run");
  }

  TEST_CASE("a case's outcome survives saving, and results saved without one are read by ran and passed") {
    const grade::LabResult back = grade::lab_from_json(grade::to_json(sample_report().labs[0]));
    CHECK(back.cases[0].outcome == grade::Outcome::passed);
    CHECK(back.cases[1].outcome == grade::Outcome::failed);
    CHECK(back.cases[2].outcome == grade::Outcome::not_run);
    nlohmann::json old = grade::to_json(sample_report().labs[0]);
    for (auto& c : old["cases"]) c.erase("outcome");
    const grade::LabResult old_back = grade::lab_from_json(old);
    CHECK(old_back.cases[0].outcome == grade::Outcome::passed);
    CHECK(old_back.cases[1].outcome == grade::Outcome::failed);
    CHECK(old_back.cases[2].outcome == grade::Outcome::not_run);
  }

  TEST_CASE("a case that could not run is shown as not run, never as a failure") {
    grade::Report report = sample_report();
    grade::CaseResult no_mpi{"mpi-1", "correctness"};
    no_mpi.outcome = grade::Outcome::not_run;
    no_mpi.message = "not run: needs MPI (mpirun is not on PATH)";
    report.labs[0].cases.push_back(no_mpi);
    CHECK(grade::to_text(report, true).find("NOT RUN mpi-1") != std::string::npos);
    CHECK(grade::to_text(report, true).find("FAIL mpi-1") == std::string::npos);
    CHECK(grade::to_markdown(report, true).find("| mpi-1 | correctness | not run |") != std::string::npos);
  }

  TEST_CASE("a hidden case's details are withheld from students but not instructors") {
    const auto report = sample_report();
    CHECK(grade::to_text(report, false).find("bin 3 expected") == std::string::npos);
    CHECK(grade::to_text(report, false).find("hidden case") != std::string::npos);
    CHECK(grade::to_text(report, true).find("bin 3 expected") != std::string::npos);
    CHECK(grade::to_markdown(report, false).find("| b (hidden) | correctness | fail |") != std::string::npos);
  }
}
