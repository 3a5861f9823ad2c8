// The rank protocol end to end, on the CPU: the runner's RankGroup starts mpirun on a rank
// program (rank_test_rank.cpp) in the sandbox, and the ranks run a submission
// (rank_test_module.cpp) that sums over MPI and then misbehaves as asked. Needs Open MPI's
// mpirun (exit 77 without it, as a skipped test), no GPU.
#define DOCTEST_CONFIG_IMPLEMENT
#include "rank_test.h"

#include "labkit/rank_group.h"
#include "labkit/remote.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace {

namespace fs = std::filesystem;
using labkit::RankGroup;
using labkit::wire::Request;

constexpr int ranks = 2;

labkit::RankGroupOptions options(double call_seconds = 20) {
  labkit::RankGroupOptions o;
  o.mpirun = labkit::find_mpirun().value_or("");
  o.program = std::getenv("RANK_TEST_PROGRAM");
  o.module = std::getenv("RANK_TEST_MODULE");
  o.ranks = ranks;
  o.call_seconds = call_seconds;
  o.start_seconds = 60;
  return o;
}

// Rank r adds r + 1; every rank is told the total and what to do.
std::vector<Request> requests(int behaviour) {
  std::vector<Request> all;
  for (int r = 0; r < ranks; ++r) {
    Request request;
    request.op = labkit::wire::Op::call;
    labkit::wire::set_text(request.function, sizeof request.function, "rank_test");
    request.argument_count = 3;
    request.arguments[0] = labkit::encode_argument<int>(r + 1);
    request.arguments[1] = labkit::encode_argument<int>(ranks * (ranks + 1) / 2);
    request.arguments[2] = labkit::encode_argument<int>(behaviour);
    all.push_back(request);
  }
  return all;
}

// Processes now running the rank program (the launcher becomes mpirun, so only ranks count).
int rank_processes() {
  const fs::path program = fs::canonical(std::getenv("RANK_TEST_PROGRAM"));
  int count = 0;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator("/proc", error)) {
    std::error_code unreadable;
    if (fs::read_symlink(entry.path() / "exe", unreadable) == program) ++count;
  }
  return count;
}

bool gone_soon() {
  for (int i = 0; i < 100; ++i, usleep(20 * 1000))
    if (rank_processes() == 0) return true;
  return false;
}

}  // namespace

TEST_SUITE("rank group") {
  TEST_CASE("ranks started by mpirun in the sandbox answer each call, and are gone after stop") {
    RankGroup group(options());
    CHECK(group.call(requests(rank_test_answer)) > 0);
    CHECK(group.call(requests(rank_test_answer)) > 0);
    CHECK(group.running());
    CHECK(group.sandbox().find("Landlock") != std::string::npos);
    CHECK(rank_processes() == ranks);
    group.stop();
    CHECK(!group.running());
    CHECK(gone_soon());
  }

  TEST_CASE("a rank can neither read the kit nor write outside its folder, nor find the grader's secrets") {
    setenv("LABKIT_SECRET", "not for the ranks", 1);
    setenv("LABKIT_RESULT_TOKEN", "not for the ranks either", 1);
    RankGroup group(options());
    CHECK_NOTHROW(group.call(requests(rank_test_break_out)));
    CHECK_NOTHROW(group.call(requests(rank_test_find_secret)));
    unsetenv("LABKIT_SECRET");
    unsetenv("LABKIT_RESULT_TOKEN");
    CHECK(!fs::exists("/tmp/labkit-rank-test-escape"));
  }

  TEST_CASE("a rank that hangs is stopped and named, and the next call gets fresh ranks") {
    RankGroup group(options(2));
    CHECK(group.call(requests(rank_test_answer)) > 0);  // the first call may take start-up time
    CHECK_THROWS_WITH_AS(group.call(requests(rank_test_hang)), doctest::Contains("on rank(s) 0 and was stopped"),
                         labkit::SubmissionFailure);
    CHECK(!group.running());
    CHECK(gone_soon());
    CHECK(group.call(requests(rank_test_answer)) > 0);
  }

  TEST_CASE("a rank that dies is named") {
    RankGroup group(options());
    CHECK_THROWS_WITH_AS(group.call(requests(rank_test_crash)), doctest::Contains("the process running your code died"),
                         labkit::SubmissionFailure);
    CHECK(gone_soon());
  }

  TEST_CASE("a rank that fails is reported even while its peers wait for it") {
    RankGroup group(options(30));
    CHECK_THROWS_WITH_AS(group.call(requests(rank_test_throw)), doctest::Contains("rank 0: rank 0 gave up"),
                         labkit::SubmissionFailure);
    CHECK(gone_soon());
  }
}

int main(int argc, char** argv) {
  if (!labkit::find_mpirun()) {
    std::printf("SKIPPED: mpirun is not on PATH\n");
    return 77;
  }
  doctest::Context context(argc, argv);
  return context.run();
}
