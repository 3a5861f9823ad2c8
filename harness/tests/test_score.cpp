// Scoring what a runner reported (score.h): a case's outcome comes from its record, never from
// its message's text, and a case that could not run is never a failure.
#include "report/console_text.h"
#include "score.h"

#include <doctest/doctest.h>

namespace protocol = labkit::protocol;

namespace {

grade::LabSpec allreduce_lab() {
  grade::LabSpec lab;
  lab.dir = "13-allreduce";
  lab.id = "13";
  lab.name = "allreduce";
  lab.title = "All-reduce";
  lab.correctness_points = 60;
  lab.performance = {{"ring-16MiB", 20, 0.1, 0.8}, {"mpi-16MiB", 20, 0.1, 0.8}};
  return lab;
}

labkit::Dataset allreduce_cases() {
  labkit::Dataset dataset;
  for (const char* name : {"ragged-1000003", "mpi-ragged-1000003", "hangs", "refused"}) {
    labkit::Case c;
    c.name = name;
    c.kind = "correctness";
    dataset.correctness.push_back(c);
  }
  return dataset;
}

const grade::CaseResult& named(const grade::LabResult& result, const std::string& name) {
  for (const grade::CaseResult& c : result.cases)
    if (c.name == name) return c;
  throw std::invalid_argument("no case " + name);
}

// The allreduce lab's two timed cases scored from the records given, one each.
grade::LabResult score_timed(const nlohmann::json& ring, const nlohmann::json& mpi) {
  const grade::LabSpec lab = allreduce_lab();
  grade::Reports reports;
  reports.performance["ring-16MiB"] = {{"ring-16MiB", protocol::Outcome::passed, "", ring}};
  reports.performance["mpi-16MiB"] = {{"mpi-16MiB", protocol::Outcome::passed, "", mpi}};
  grade::LabResult result{lab.id, lab.name, lab.title};
  grade::score_performance(lab, reports, "", result);
  return result;
}

}  // namespace

TEST_SUITE("score") {
  TEST_CASE("lab 13's 'needs MPI' cases score as not run, not as failed") {
    const grade::LabSpec lab = allreduce_lab();
    grade::Reports reports;
    const std::string no_mpi = "not run: needs MPI (mpirun is not on PATH)";
    reports.correctness["ragged-1000003"] = {{"ragged-1000003", protocol::Outcome::passed, ""}};
    reports.correctness["mpi-ragged-1000003"] = {{"mpi-ragged-1000003", protocol::Outcome::not_run, no_mpi}};
    reports.correctness["hangs"] = {{"hangs", protocol::Outcome::hung, "your code did not return within 5 s"}};
    reports.correctness["refused"] = {{"refused", protocol::Outcome::not_run, "not run: 2 earlier calls never returned"}};
    reports.performance["mpi-16MiB"] = {{"mpi-16MiB", protocol::Outcome::not_run, no_mpi}};
    grade::LabResult result{lab.id, lab.name, lab.title};
    grade::score_correctness(lab, allreduce_cases(), reports, "", result);
    grade::score_performance(lab, reports, "", result);

    CHECK(named(result, "ragged-1000003").outcome == grade::Outcome::passed);
    CHECK(named(result, "ragged-1000003").points == doctest::Approx(15));
    const grade::CaseResult& mpi = named(result, "mpi-ragged-1000003");
    CHECK(mpi.outcome == grade::Outcome::not_run);
    CHECK_FALSE(mpi.failed());
    CHECK(mpi.message == no_mpi);
    CHECK(mpi.points == 0);
    CHECK(named(result, "hangs").outcome == grade::Outcome::hung);
    CHECK(named(result, "hangs").failed());
    CHECK(named(result, "refused").outcome == grade::Outcome::not_run);
    CHECK(named(result, "mpi-16MiB").outcome == grade::Outcome::not_run);
    CHECK(named(result, "mpi-16MiB").message == no_mpi);
    // Not in the reports, with no reason from the run: never timed here.
    CHECK(named(result, "ring-16MiB").outcome == grade::Outcome::not_run);

    grade::add_totals(result);
    grade::Report report{"student", "student files", {result}};
    const std::string text = grade::to_text(report, true);
    CHECK(text.find("NOT RUN mpi-ragged-1000003: " + no_mpi) != std::string::npos);
    CHECK(text.find("FAIL mpi-ragged-1000003") == std::string::npos);
    CHECK(text.find("FAIL hangs") != std::string::npos);
  }

  TEST_CASE("a correctness case missing from a run that finished fails; one a crash left out is not run") {
    const grade::LabSpec lab = allreduce_lab();
    grade::LabResult finished{lab.id, lab.name, lab.title};
    grade::score_correctness(lab, allreduce_cases(), {}, "", finished);
    CHECK(named(finished, "ragged-1000003").outcome == grade::Outcome::failed);
    grade::LabResult crashed{lab.id, lab.name, lab.title};
    grade::score_correctness(lab, allreduce_cases(), {}, "the process was killed by SIGSEGV", crashed);
    CHECK(named(crashed, "ragged-1000003").outcome == grade::Outcome::not_run);
    CHECK(named(crashed, "ragged-1000003").message == "no result: the process was killed by SIGSEGV");
  }

  TEST_CASE("a case reported twice is not trusted") {
    const grade::LabSpec lab = allreduce_lab();
    grade::Reports reports;
    const protocol::CorrectnessRecord passed{"ragged-1000003", protocol::Outcome::passed, ""};
    reports.correctness["ragged-1000003"] = {passed, passed};
    grade::LabResult result{lab.id, lab.name, lab.title};
    grade::score_correctness(lab, allreduce_cases(), reports, "", result);
    CHECK(named(result, "ragged-1000003").outcome == grade::Outcome::failed);
    CHECK(named(result, "ragged-1000003").points == 0);
  }

  TEST_CASE("a fast, correct call without the lab's lesson (lab 11: no overlap) earns no speed points") {
    const nlohmann::json fast = {{"ratio", 1.2},
                                 {"output_ok", true},
                                 {"student", {{"median_ms", 1.0}, {"relative_error", 0.01}}},
                                 {"reference", {{"median_ms", 1.2}, {"relative_error", 0.01}}}};
    nlohmann::json serial = fast;
    serial["lesson_missing"] = "no overlap: your call took 0.98 x its phases one after another";
    const grade::LabResult result = score_timed(fast, serial);
    CHECK(named(result, "ring-16MiB").points == doctest::Approx(20));
    CHECK(named(result, "mpi-16MiB").points == 0);
    CHECK(named(result, "mpi-16MiB").outcome == grade::Outcome::failed);
    CHECK(named(result, "mpi-16MiB").message.find("no overlap") != std::string::npos);
  }

  TEST_CASE("a call faster than the peak of the units its record names earns no speed points") {
    // 2 * 4096^3 FLOP in 0.1 ms is 1374 TFLOP/s: within no FP32 peak, beyond a 1070 TFLOP/s
    // BF16 tensor-core peak; in 0.2 ms (687 TFLOP/s) it is within the tensor cores' peak.
    const nlohmann::json beyond = {{"ratio", 2.0},
                                   {"flops", 2.0 * 4096.0 * 4096.0 * 4096.0},
                                   {"peak_bf16_tensor_gflops", 1070000.0},
                                   {"student", {{"median_ms", 0.1}, {"relative_error", 0.01}}},
                                   {"reference", {{"median_ms", 0.2}, {"relative_error", 0.01}}}};
    nlohmann::json within = beyond;
    within["ratio"] = 1.0;
    within["student"]["median_ms"] = 0.2;
    const grade::LabResult result = score_timed(beyond, within);
    CHECK(named(result, "ring-16MiB").points == 0);
    CHECK(named(result, "ring-16MiB").message.find("BF16 tensor-core peak") != std::string::npos);
    CHECK(named(result, "mpi-16MiB").points == doctest::Approx(20));
  }

  TEST_CASE("an unconfirmed report says so when most of the grader's empty calls ran past their ceiling") {
    const nlohmann::json ceiled = {{"ratio", 0.78},
                                   {"student",
                                    {{"median_ms", 1.34},
                                     {"relative_error", 0.01},
                                     {"samples", 90},
                                     {"confirmed", false},
                                     {"reported_ms", 1.03},
                                     {"ceiled_empty_calls", 58}}},
                                   {"reference", {{"median_ms", 1.04}, {"relative_error", 0.01}}}};
    nlohmann::json within = ceiled;
    within["student"]["ceiled_empty_calls"] = 3;
    const grade::LabResult result = score_timed(ceiled, within);
    const std::string& past = named(result, "ring-16MiB").message;
    CHECK(past.find("the grader's clock saw at least 1.3400 ms") != std::string::npos);
    CHECK(past.find("In 58 of 90 samples the grader's own empty call") != std::string::npos);
    CHECK(named(result, "mpi-16MiB").message.find("empty call") == std::string::npos);
    // The message changes, the points do not.
    CHECK(named(result, "ring-16MiB").points == doctest::Approx(named(result, "mpi-16MiB").points));
  }
}
