// The grader-runner protocol (labkit/protocol.h): what one side writes the other reads back.
#include "labkit/protocol.h"

#include <doctest/doctest.h>

#include <set>

namespace protocol = labkit::protocol;

namespace {

// One record as the channel carries it: JSON with the token added.
std::string line(const protocol::Record& record, const std::string& token) {
  nlohmann::json json = protocol::to_json(record);
  json["token"] = token;
  return json.dump();
}

}  // namespace

TEST_SUITE("protocol") {
  TEST_CASE("a case's record comes back with its outcome") {
    for (protocol::Outcome outcome :
         {protocol::Outcome::passed, protocol::Outcome::failed, protocol::Outcome::not_run, protocol::Outcome::hung}) {
      const auto back = protocol::read_record(line(protocol::CorrectnessRecord{"n-7", outcome, "why"}, "t0k"), "t0k");
      REQUIRE(back.has_value());
      const auto* record = std::get_if<protocol::CorrectnessRecord>(&*back);
      REQUIRE(record != nullptr);
      CHECK(record->case_name == "n-7");
      CHECK(record->outcome == outcome);
      CHECK(record->message == "why");
    }
    CHECK(std::string(protocol::to_string(protocol::Outcome::not_run)) == "not run");
  }

  TEST_CASE("a performance record keeps its numbers; a calibration record is told apart") {
    const nlohmann::json numbers = {{"ratio", 0.5}, {"student", {{"median_ms", 2.0}}}};
    const auto back =
        protocol::read_record(line(protocol::PerformanceRecord{"big", protocol::Outcome::passed, "", numbers}, "t"), "t");
    REQUIRE(back.has_value());
    const auto& record = std::get<protocol::PerformanceRecord>(*back);
    CHECK(record.outcome == protocol::Outcome::passed);
    CHECK_FALSE(record.calibration);
    CHECK(record.measurement["ratio"] == 0.5);
    CHECK(record.measurement["student"]["median_ms"] == 2.0);
    protocol::PerformanceRecord calibration{"big", protocol::Outcome::passed, "", numbers, true};
    CHECK(protocol::type_of(calibration) == protocol::RecordType::calibration);
    CHECK(std::get<protocol::PerformanceRecord>(*protocol::read_record(line(calibration, "t"), "t")).calibration);
  }

  TEST_CASE("a line without this run's token, or not a record, is not read") {
    const protocol::Record done = protocol::DoneRecord{0};
    CHECK_FALSE(protocol::read_record(line(done, "forged"), "t0k").has_value());
    CHECK_FALSE(protocol::read_record(protocol::to_json(done).dump(), "t0k").has_value());
    CHECK_FALSE(protocol::read_record("not json", "t0k").has_value());
    CHECK_FALSE(protocol::read_record(R"({"type": "unknown", "token": "t0k"})", "t0k").has_value());
    CHECK_FALSE(protocol::read_record(R"({"type": "done", "token": ""})", "").has_value());
    CHECK(protocol::read_record(line(done, "t0k"), "t0k").has_value());
  }

  TEST_CASE("every record type reads back as itself") {
    const std::vector<protocol::Record> records = {
        protocol::CorrectnessRecord{"a", protocol::Outcome::passed, ""},
        protocol::PerformanceRecord{"b", protocol::Outcome::not_run, "not timed"},
        protocol::ProfiledRecord{"c", true, ""},
        protocol::ProgressRecord{"correctness", "a", "checking"},
        protocol::DeviceRecord{"H100", "9.0", 132},
        protocol::SandboxRecord{"landlock"},
        protocol::SkippedRecord{"no CUDA device"},
        protocol::FaultRecord{"dataset unreadable"},
        protocol::ForbiddenRecord{"libcublas"},
        protocol::DoneRecord{2},
        protocol::ClockRecord{false, "timing the reference"},
        protocol::ClockRecord{false, "waiting for the GPU alone", true}};
    for (const protocol::Record& record : records) {
      const auto back = protocol::read_record(line(record, "t"), "t");
      REQUIRE(back.has_value());
      CHECK(protocol::type_of(*back) == protocol::type_of(record));
      CHECK(protocol::to_json(*back)["type"] == protocol::to_json(record)["type"]);
    }
    CHECK(std::get<protocol::DeviceRecord>(*protocol::read_record(line(records[4], "t"), "t")).sm_count == 132);
    CHECK(std::get<protocol::DoneRecord>(*protocol::read_record(line(records[9], "t"), "t")).failures == 2);
    const auto clock = std::get<protocol::ClockRecord>(*protocol::read_record(line(records[10], "t"), "t"));
    CHECK_FALSE(clock.counting);
    CHECK(clock.why == "timing the reference");
    CHECK_FALSE(clock.to_time);
    CHECK(std::get<protocol::ClockRecord>(*protocol::read_record(line(records[11], "t"), "t")).to_time);
  }

  TEST_CASE("the runner's arguments survive to_argv and parse") {
    protocol::RunnerArguments arguments;
    arguments.student = "/w/module.so";
    arguments.reference = "/b/lab-01-histogram-solution.so";
    arguments.dataset = "/k/datasets/01-histogram.yaml";
    arguments.thresholds = {{"uniform-100MiB", 0.25, 0.9, 15}, {"odd:name", 0.1, 1, 2.5}};
    arguments.calibration_dir = "/k/build/calibration";
    arguments.kit_fingerprint = "abc123";
    arguments.forbidden_libraries = {"libcublas", "libnccl"};
    arguments.host_wrapper = {"/cuda/bin/compute-sanitizer", "--tool=memcheck", "--log-file=/l/memcheck-{start}.log"};
    arguments.tool_slowdown = 20;
    arguments.call_seconds = 7.5;
    arguments.min_compute_capability = "7.5";
    arguments.min_gpus = 2;
    arguments.profile = arguments.time_failed = true;
    arguments.seed = 12345678901234ull;
    arguments.test_suite = "correctness,performance";
    arguments.subcases = {"n-1", "n-7"};
    arguments.doctest = {"--no-intro=true"};
    const protocol::RunnerArguments back = protocol::RunnerArguments::parse(arguments.to_argv());
    CHECK(back.to_argv() == arguments.to_argv());
    CHECK(back.student == arguments.student);
    CHECK(back.forbidden_libraries == arguments.forbidden_libraries);
    CHECK(back.host_wrapper == arguments.host_wrapper);
    CHECK(back.tool_slowdown == 20);
    CHECK(back.call_seconds == 7.5);
    CHECK(back.min_gpus == 2);
    CHECK(back.profile);
    CHECK(back.time_failed);
    CHECK_FALSE(back.calibrate);
    CHECK(back.seed == arguments.seed);
    CHECK(back.subcases == arguments.subcases);
    CHECK(back.doctest == arguments.doctest);
    REQUIRE(back.thresholds.size() == 2);
    CHECK(back.thresholds[1].case_name == "odd:name");
    CHECK(back.thresholds[1].zero_credit_ratio == 0.1);
    CHECK(back.thresholds[0].full_credit_ratio == 0.9);
    CHECK(back.thresholds[1].points == 2.5);
    CHECK_THROWS_AS(protocol::RunnerArguments::parse({"--threshold=no-ratios"}), std::invalid_argument);
    CHECK_THROWS_AS(protocol::RunnerArguments::parse({"--threshold=case:x:1"}), std::invalid_argument);
  }

  TEST_CASE("the runner reads a flag and its value apart too, and leaves doctest's flags alone") {
    const auto parsed = protocol::RunnerArguments::parse(
        {"--student", "/w/module.so", "--export", "/out", "--seed", "7", "-ltc", "--subcase=a", "--calibrate"});
    CHECK(parsed.student == "/w/module.so");
    CHECK(parsed.export_dir == "/out");
    CHECK(parsed.seed == 7u);
    CHECK(parsed.calibrate);
    CHECK(parsed.subcases == std::vector<std::string>{"a"});
    CHECK(parsed.doctest == std::vector<std::string>{"-ltc"});
    CHECK_THROWS_WITH(protocol::RunnerArguments::parse({"--seed=many"}), doctest::Contains("--seed cannot read 'many'"));
    CHECK_THROWS_WITH(protocol::RunnerArguments::parse({"--student"}), doctest::Contains("--student needs a value"));
  }

  TEST_CASE("no exit status means two things") {
    namespace exit_status = protocol::exit_status;
    const std::set<int> statuses = {exit_status::ok,        exit_status::failed,       exit_status::usage,
                                    exit_status::not_run,   exit_status::kit_fault,    exit_status::runner_fault,
                                    exit_status::skipped,   exit_status::context_lost};
    CHECK(statuses.size() == 8);
    CHECK(exit_status::runner_fault != exit_status::not_run);
  }

  TEST_CASE("a module's variable is named after it") {
    CHECK(protocol::module_variable("mpi") == "LABKIT_MODULE_MPI");
  }
}
