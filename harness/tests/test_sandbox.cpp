// The host's sandbox and its call table, without a GPU: a forked child enters the sandbox and
// tries what a hostile submission would; the wire's argument codec calls a plain function.
#include "labkit/host.h"
#include "labkit/remote.h"
#include "labkit/sandbox.h"

#include <doctest/doctest.h>

#include <fcntl.h>
#include <linux/landlock.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;

namespace {

bool kernel_has_landlock() {
  return syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION) >= 1;
}

// Runs `attempt` in a child after it entered the sandbox; its exit code is the test's answer.
int in_sandbox(const labkit::SandboxPolicy& policy, int (*attempt)(const labkit::SandboxPolicy&)) {
  const pid_t pid = fork();
  if (pid == 0) {
    try {
      labkit::enter_sandbox(policy);
    } catch (...) {
      _exit(99);
    }
    _exit(attempt(policy));
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 98;
}

int open_fails(const char* path, int flags) {
  const int fd = open(path, flags | O_CREAT, 0644);
  if (fd >= 0) close(fd);
  return fd < 0 ? 0 : 1;
}

int reads_the_kit(const labkit::SandboxPolicy&) { return open_fails(LABKIT_TEST_SOURCE_ROOT "/meson.build", O_RDONLY); }
int writes_the_kit(const labkit::SandboxPolicy&) {
  return open_fails(LABKIT_TEST_SOURCE_ROOT "/grading/sandbox-escape", O_WRONLY);
}
int writes_tmp(const labkit::SandboxPolicy&) { return open_fails("/tmp/labkit-sandbox-escape", O_WRONLY); }
int reads_parent_environ(const labkit::SandboxPolicy&) {
  const std::string path = "/proc/" + std::to_string(getppid()) + "/environ";
  return open_fails(path.c_str(), O_RDONLY);
}
int uses_scratch_and_module(const labkit::SandboxPolicy& policy) {
  std::ofstream(policy.scratch_dir + "/note") << "allowed";
  std::ifstream module(policy.readable_files.at(0));
  std::ifstream libc("/etc/hostname");
  return std::ifstream(policy.scratch_dir + "/note") && module && libc ? 0 : 1;
}

labkit::SandboxPolicy make_policy() {
  const fs::path scratch = fs::temp_directory_path() / ("labkit-sandbox-test-" + std::to_string(getpid()));
  fs::create_directories(scratch);
  fs::permissions(scratch, fs::perms::all);  // the child may run as nobody
  const fs::path module = scratch.string() + "-module.so";
  std::ofstream(module) << "not really a module";
  fs::permissions(module, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  return {{module.string()}, scratch.string()};
}

// The host's order: root given up first (before CUDA starts), the sandbox later. The tool the
// runner named must still count when the sandbox is entered, and be out of the environment.
int leaves_root_then_enters(const labkit::SandboxPolicy& policy) {
  const bool was_root = geteuid() == 0;
  setenv("LABKIT_TOOL", "compute-sanitizer", 1);
  setenv("LABKIT_TOOL_DIR", policy.scratch_dir.c_str(), 1);
  labkit::leave_root();
  if (std::getenv("LABKIT_TOOL") != nullptr || std::getenv("LABKIT_TOOL_DIR") != nullptr) return 1;
  if (was_root && geteuid() == 0) return 2;
  const std::string in_force = labkit::enter_sandbox(policy);
  if (in_force.find("under compute-sanitizer") == std::string::npos) return 3;
  if (was_root && in_force.rfind("uid 65534 (nobody)", 0) != 0) return 4;
  return 0;
}

int add_three(int a, float b, const int* p) { return a + int(b) + (p == nullptr ? 100 : 0); }
void takes_stream(double, cudaStream_t stream) { CHECK(stream == reinterpret_cast<cudaStream_t>(0x1234)); }

}  // namespace

TEST_SUITE("sandbox") {
  TEST_CASE("inside the sandbox the kit, /tmp and the parent's files are out of reach") {
    if (!kernel_has_landlock()) {
      MESSAGE("this kernel has no Landlock: the file checks are skipped");
      return;
    }
    const labkit::SandboxPolicy policy = make_policy();
    CHECK(in_sandbox(policy, reads_the_kit) == 0);
    CHECK(in_sandbox(policy, writes_the_kit) == 0);
    CHECK(in_sandbox(policy, writes_tmp) == 0);
    CHECK(in_sandbox(policy, reads_parent_environ) == 0);
    CHECK(in_sandbox(policy, uses_scratch_and_module) == 0);
    fs::remove_all(policy.scratch_dir);
    fs::remove(policy.readable_files[0]);
  }

  TEST_CASE("root given up before the sandbox: the sandbox still knows the host's tool and hides it") {
    const labkit::SandboxPolicy policy = make_policy();
    const pid_t pid = fork();
    if (pid == 0) {
      try {
        _exit(leaves_root_then_enters(policy));
      } catch (...) {
        _exit(99);
      }
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    fs::remove_all(policy.scratch_dir);
    fs::remove(policy.readable_files[0]);
  }
}

TEST_SUITE("wire") {
  TEST_CASE("a request's arguments decode in order into the contract function's types") {
    labkit::wire::Request request;
    request.argument_count = 3;
    request.arguments[0].bits = labkit::wire::to_bits(40);
    request.arguments[1].bits = labkit::wire::to_bits(1.5f);
    request.arguments[2].kind = labkit::wire::ArgumentKind::null_pointer;
    const labkit::HostMappings none;
    const std::uint64_t result =
        labkit::ContractInvoker<decltype(add_three)>::invoke(reinterpret_cast<void*>(&add_three), request, none, nullptr);
    CHECK(labkit::wire::from_bits<int>(result) == 141);
    CHECK(labkit::ContractInvoker<decltype(add_three)>::argument_count == 3);

    request.argument_count = 2;
    request.arguments[0].bits = labkit::wire::to_bits(2.0);
    request.arguments[1].kind = labkit::wire::ArgumentKind::stream;
    labkit::ContractInvoker<decltype(takes_stream)>::invoke(reinterpret_cast<void*>(&takes_stream), request, none,
                                                            reinterpret_cast<cudaStream_t>(0x1234));
  }

  TEST_CASE("a pointer to memory the host was not given is refused") {
    labkit::wire::Argument pointer;
    pointer.kind = labkit::wire::ArgumentKind::pointer;
    pointer.bits = 7;
    const labkit::HostMappings none;
    CHECK_THROWS_AS(labkit::decode_argument<const int*>(pointer, none, nullptr), std::invalid_argument);
  }
}

namespace {
// A host program the tests start, or false with the reason when the build has not made it.
bool host_built(const std::string& program) {
  if (fs::exists(program)) return true;
  MESSAGE(program << " is not built (meson test builds it first)");
  return false;
}
}  // namespace

TEST_SUITE("host process") {
  TEST_CASE("a host that cannot start says why, and the call fails with that message") {
    int devices = 0;
    if (cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0) {
      MESSAGE("this machine has a GPU: the host starts, which the GPU tests cover");
      return;
    }
    const std::string program = LABKIT_TEST_BUILD_ROOT "/labs/lab-01-histogram-host";
    if (!host_built(program)) return;
    labkit::HostProcess host({program, "/nonexistent/module.so", 5});
    labkit::wire::Request request;
    request.op = labkit::wire::Op::noop;
    try {
      host.request(request);
      FAIL("the request should have failed");
    } catch (const labkit::SubmissionFailure& failure) {
      // No driver here: the host reports the CUDA error it met before loading anything.
      CHECK(std::string(failure.what()).find("cuda") != std::string::npos);
    }
  }

  TEST_CASE("a timed call past its limit is stopped as slow, not as a hang, and the next gets a fresh host") {
    const std::string program = LABKIT_TEST_BUILD_ROOT "/harness/tests/silent-host";
    if (!host_built(program)) return;
    labkit::HostProcess host({program, "", 5});
    labkit::wire::Request request;
    request.op = labkit::wire::Op::noop;
    request.timed = 1;
    // More stops than the hangs after which calls are refused (HostOptions::max_hangs): none
    // counts as one, and each is over in about its limit, not the 5 s a hang waits.
    for (int call = 0; call <= labkit::HostOptions{}.max_hangs; ++call) {
      const auto started = std::chrono::steady_clock::now();
      CHECK_THROWS_AS(host.request(request, 100), labkit::TimedCallStopped);
      CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(3));
    }
  }

  TEST_CASE("a host program that does not exist is reported, not waited for") {
    labkit::HostProcess host({"/nonexistent/host", "", 5});
    labkit::wire::Request request;
    request.op = labkit::wire::Op::noop;
    CHECK_THROWS_WITH_AS(host.request(request), doctest::Contains("exited with status 127"), labkit::SubmissionFailure);
  }
}
