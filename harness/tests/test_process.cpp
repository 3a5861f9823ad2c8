#include "process.h"
#include "runner_client.h"

#include <doctest/doctest.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <thread>

namespace {
grade::ChildOutcome run_shell(const std::string& script, int wall_seconds = 10, bool channel = false,
                              const std::string& token = "t0ken") {
  const auto log = (std::filesystem::temp_directory_path() / "labkit-test-child.log").string();
  grade::ChildRequest request{{"/bin/bash", "-c", script}, {}, {"LABKIT_SECRET"}, log, {}, channel, token};
  return grade::run_child(request, {wall_seconds, 20, 1 << 20});
}
}  // namespace

TEST_SUITE("process") {
  TEST_CASE("exit codes and output are collected") {
    const auto outcome = run_shell("echo hello; echo oops >&2; exit 3");
    CHECK(outcome.exit_code == 3);
    CHECK(outcome.describe() == "exit 3");
    CHECK(outcome.output_tail.find("hello") != std::string::npos);
    CHECK(outcome.output_tail.find("oops") != std::string::npos);
  }

  TEST_CASE("a child runs on the CPUs it was given") {
    cpu_set_t ours;
    REQUIRE(sched_getaffinity(0, sizeof ours, &ours) == 0);
    int last = 0;
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
      if (CPU_ISSET(cpu, &ours)) last = cpu;
    const auto log = (std::filesystem::temp_directory_path() / "labkit-test-child-cpus.log").string();
    grade::ChildRequest request{{"/bin/sh", "-c", "grep Cpus_allowed_list /proc/self/status"}, {}, {}, log};
    request.cpus = {last};
    const auto outcome = grade::run_child(request, {10, 20, 1 << 20});
    CHECK(outcome.output_tail.find("Cpus_allowed_list:\t" + std::to_string(last) + "\n") != std::string::npos);
  }

  TEST_CASE("a hang is killed at the wall-clock limit, with what it started") {
    const auto outcome = run_shell("sleep 100 & sleep 100", 1);
    CHECK(outcome.timed_out);
    CHECK(outcome.wall_seconds < 5);
    CHECK(outcome.describe().find("timed out") != std::string::npos);
  }

  TEST_CASE("the limit counts only the time the child does not spend waiting on others") {
    const auto log = (std::filesystem::temp_directory_path() / "labkit-test-child.log").string();
    grade::ChildRequest request{{"/bin/bash", "-c", "sleep 2"}, {}, {}, log};
    const auto started = std::chrono::steady_clock::now();
    request.uncounted_seconds = [started] {  // all but its first half second
      return std::max(0.0, std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count() - 0.5);
    };
    const auto waited = grade::run_child(request, {1, 20, 1 << 20});
    CHECK_FALSE(waited.timed_out);
    CHECK(waited.exit_code == 0);
    CHECK(waited.uncounted_seconds > 1);

    request.argv = {"/bin/bash", "-c", "sleep 100"};
    request.uncounted_seconds = [] { return 0.5; };  // its clock ran again after half a second
    const auto stuck = grade::run_child(request, {1, 20, 1 << 20});
    CHECK(stuck.timed_out);
    CHECK(stuck.wall_seconds < 5);
  }

  TEST_CASE("a runner's stopped clock sums its stopped spans, an open one up to now") {
    using labkit::protocol::ClockRecord;
    grade::RunnerClock clock;
    CHECK(clock.stopped_seconds() == 0);
    clock.take(ClockRecord{false, "waiting for the GPU"});
    std::this_thread::sleep_for(std::chrono::milliseconds(60));
    clock.take(ClockRecord{false, "a second stop changes nothing"});
    CHECK(clock.stopped_seconds() >= 0.05);
    clock.take(ClockRecord{true, ""});
    const double first_span = clock.stopped_seconds();
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    CHECK(clock.stopped_seconds() == first_span);  // running: nothing more is left out
    clock.take(ClockRecord{true, ""});
    CHECK(clock.stopped_seconds() == first_span);
  }

  TEST_CASE("a child killed for time says how much of it was its own") {
    grade::ChildOutcome outcome;
    outcome.timed_out = true;
    outcome.wall_seconds = 42.5;
    CHECK(outcome.describe() == "timed out after 42 s and was killed");
    outcome.uncounted_seconds = 12.2;
    CHECK(outcome.describe() ==
          "timed out after 30 s of its own (and 12 s waiting for the GPU or timing the reference) and was killed");
  }

  TEST_CASE("a crash is named by its signal") {
    const auto outcome = run_shell("kill -SEGV $$");
    CHECK(outcome.signal == SIGSEGV);
    CHECK(outcome.describe().find("SEGV") != std::string::npos);
  }

  TEST_CASE("output beyond the file-size limit ends the child") {
    const auto outcome = run_shell("head -c 5000000 /dev/zero");
    CHECK(outcome.exit_code != 0);
  }

  TEST_CASE("the result channel carries lines; the secret and the channel's variables stay private") {
    setenv("LABKIT_SECRET", "do-not-leak", 1);
    const auto outcome = run_shell(
        "echo \"{\\\"token\\\": \\\"$LABKIT_RESULT_TOKEN\\\"}\" >&$LABKIT_RESULT_FD; echo \"secret=$LABKIT_SECRET\"", 10,
        true, "abc123");
    unsetenv("LABKIT_SECRET");
    REQUIRE(outcome.result_lines.size() == 1);
    CHECK(outcome.result_lines[0] == "{\"token\": \"abc123\"}");
    CHECK(outcome.output_tail.find("do-not-leak") == std::string::npos);
  }

  TEST_CASE("tokens are random") {
    CHECK(grade::random_token() != grade::random_token());
    CHECK(grade::random_token().size() == 32);
  }
}
