// The runner's side of the MPI ranks (labkit/rank_group.h) without starting any: how mpirun
// is found and started, what the ranks inherit, and why a group cannot run.
#include "labkit/rank_group.h"

#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace {

namespace fs = std::filesystem;

bool has(const std::vector<std::string>& items, const std::string& item) {
  return std::find(items.begin(), items.end(), item) != items.end();
}

// The value after `flag` (an --mca pair: the value after the name).
std::string after(const std::vector<std::string>& items, const std::string& flag) {
  const auto found = std::find(items.begin(), items.end(), flag);
  return found == items.end() || found + 1 == items.end() ? "" : *(found + 1);
}

}  // namespace

TEST_SUITE("rank group") {
  TEST_CASE("mpirun starts through the sandboxed launcher, with transports that work inside the sandbox") {
    labkit::RankGroupOptions options;
    options.mpirun = "/usr/bin/mpirun";
    options.program = "/kit/labs/lab-13-allreduce-mpi-rank";
    options.module = "/work/module-mpi.so";
    options.ranks = 2;
    const auto argv = labkit::launch_command(options, "/tmp/labkit-ranks-x", "/tmp/labkit-ranks-x/ranks.sock");
    REQUIRE(argv.size() > 10);
    CHECK(argv[0] == options.program);
    CHECK(argv[1] == "--launch");
    const auto dashes = std::find(argv.begin(), argv.end(), "--");
    REQUIRE(dashes != argv.end());
    CHECK(*(dashes + 1) == options.mpirun);
    CHECK(after(argv, "-np") == "2");
    CHECK(after(argv, "pml") == "ob1");
    CHECK(after(argv, "btl") == "self,vader");
    CHECK(after(argv, "btl_vader_single_copy_mechanism") == "none");
    CHECK(after(argv, "btl_vader_backing_directory") == "/tmp/labkit-ranks-x");
    CHECK(after(argv, "--socket") == "/tmp/labkit-ranks-x/ranks.sock");
    CHECK(after(argv, "--module") == options.module);
    CHECK(argv.back() == "/tmp/labkit-ranks-x");  // the ranks' --scratch
    CHECK(!has(argv, "--allow-run-as-root"));      // mpirun never runs as root: the launcher drops it
  }

  TEST_CASE("the ranks inherit no secret, only where things are, NCCL's and Open MPI's settings") {
    std::vector<std::string> ours = {"PATH=/usr/bin", "LABKIT_SECRET=s3cret", "LABKIT_RESULT_TOKEN=abc",
                                     "LABKIT_RESULT_FD=100", "LABKIT_RUN_SEED=7", "NCCL_DEBUG=INFO",
                                     "OMPI_MCA_btl_vader_verbose=1", "CUDA_VISIBLE_DEVICES=0,1", "HOME=/root"};
    std::vector<char*> pointers;
    for (auto& text : ours) pointers.push_back(text.data());
    pointers.push_back(nullptr);
    const auto env = labkit::rank_environment("/tmp/s", pointers.data());
    for (const std::string& variable : env) CHECK_MESSAGE(variable.rfind("LABKIT_", 0) != 0, variable);
    CHECK(has(env, "PATH=/usr/bin"));
    CHECK(has(env, "HOME=/tmp/s"));
    CHECK(!has(env, "HOME=/root"));
    CHECK(has(env, "TMPDIR=/tmp/s"));
    CHECK(has(env, "NCCL_DEBUG=INFO"));
    CHECK(has(env, "OMPI_MCA_btl_vader_verbose=1"));
    CHECK(has(env, "CUDA_VISIBLE_DEVICES=0,1"));
    CHECK(has(env, "NCCL_NVLS_ENABLE=0"));  // multicast off unless the instructor says otherwise

    std::vector<std::string> with_multicast = {"NCCL_NVLS_ENABLE=1"};
    std::vector<char*> on = {with_multicast[0].data(), nullptr};
    const auto kept = labkit::rank_environment("/tmp/s", on.data());
    CHECK(has(kept, "NCCL_NVLS_ENABLE=1"));
    CHECK(!has(kept, "NCCL_NVLS_ENABLE=0"));
  }

  TEST_CASE("without the rank program, the module or mpirun, the reason reads 'not run: needs MPI'") {
    const fs::path folder = fs::temp_directory_path() / ("labkit-rank-test-" + std::to_string(getpid()));
    fs::create_directories(folder);
    const std::string program = (folder / "rank").string(), module = (folder / "module-mpi.so").string();
    std::ofstream(program) << "#!/bin/sh\n";
    std::ofstream(module) << "";
    const std::optional<std::string> mpirun = "/usr/bin/mpirun";
    CHECK(labkit::why_ranks_cannot_run(program, module, mpirun).empty());
    CHECK(labkit::why_ranks_cannot_run((folder / "missing").string(), module, mpirun).rfind("not run: needs MPI (no rank program missing beside the runner", 0) == 0);
    CHECK(labkit::why_ranks_cannot_run(program, "", mpirun).rfind("not run: needs MPI (part 2 was not compiled", 0) == 0);
    CHECK(labkit::why_ranks_cannot_run(program, module, std::nullopt) == "not run: needs MPI (mpirun is not on PATH)");
    fs::remove_all(folder);
  }

  TEST_CASE("mpirun is looked up on PATH") {
    const fs::path folder = fs::temp_directory_path() / ("labkit-mpirun-test-" + std::to_string(getpid()));
    fs::create_directories(folder);
    const char* saved = std::getenv("PATH");
    const std::string old_path = saved != nullptr ? saved : "";
    setenv("PATH", (folder.string() + ":/nonexistent").c_str(), 1);
    CHECK(!labkit::find_mpirun());
    std::ofstream(folder / "mpirun") << "#!/bin/sh\n";
    chmod((folder / "mpirun").c_str(), 0755);
    CHECK(labkit::find_mpirun() == (folder / "mpirun").string());
    setenv("PATH", old_path.c_str(), 1);
    fs::remove_all(folder);
  }
}
