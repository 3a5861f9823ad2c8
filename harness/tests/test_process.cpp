#include "process.h"

#include <doctest/doctest.h>

#include <csignal>
#include <filesystem>

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

  TEST_CASE("a hang is killed at the wall-clock limit, with what it started") {
    const auto outcome = run_shell("sleep 100 & sleep 100", 1);
    CHECK(outcome.timed_out);
    CHECK(outcome.wall_seconds < 5);
    CHECK(outcome.describe().find("timed out") != std::string::npos);
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
