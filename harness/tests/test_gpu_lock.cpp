// The GPUs' lock files (labkit/gpu_lock.h): one that cannot be opened is an error, never
// skipped, as timing without it would not have the GPU alone.
#include "labkit/gpu_lock.h"

#include <doctest/doctest.h>
#include <sys/file.h>
#include <unistd.h>

#include <filesystem>

namespace fs = std::filesystem;

TEST_SUITE("gpu lock") {
  TEST_CASE("every lock file of the list is opened and locked") {
    const fs::path folder = fs::temp_directory_path() / "labkit-test-gpu-lock";
    fs::create_directories(folder);
    const std::vector<int> fds =
        labkit::open_gpu_locks((folder / "gpu-0.lock").string() + "::" + (folder / "gpu-1.lock").string());
    REQUIRE(fds.size() == 2);
    labkit::lock_gpus(fds, LOCK_SH);
    labkit::lock_gpus(fds, LOCK_EX);
    for (const int fd : fds) ::close(fd);
    CHECK(labkit::open_gpu_locks("").empty());
  }

  TEST_CASE("a lock file that cannot be opened is an error that names it") {
    const std::string missing = "/nonexistent-labkit-folder/gpu-0.lock";
    CHECK_THROWS_WITH(labkit::open_gpu_locks(missing), doctest::Contains("cannot open the GPU lock file /nonexistent-labkit-folder/gpu-0.lock"));
  }
}
