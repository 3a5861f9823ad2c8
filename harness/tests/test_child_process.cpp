// What the runner reads of its children from outside (harness/src/runner/child_process.h): the GPU
// device files a host holds, by which a CUDA context of its own shows; and which buffers a
// call hands a child to map.
#include "../src/runner/child_process.h"

#include <doctest/doctest.h>
#include <sched.h>
#include <unistd.h>

#include <filesystem>
#include <future>
#include <string>
#include <thread>

namespace fs = std::filesystem;

TEST_CASE("only the GPUs' own device files count, not the control or UVM files") {
  const fs::path folder = fs::temp_directory_path() / ("labkit-fds-" + std::to_string(getpid()));
  fs::remove_all(folder);
  fs::create_directories(folder);
  int fd = 3;
  for (const char* target : {"/dev/nvidia0", "/dev/nvidia0", "/dev/nvidia1", "/dev/nvidiactl", "/dev/nvidia-uvm",
                             "/dev/nvidia-uvm-tools", "/dev/null", "socket:[1234]"})
    fs::create_symlink(target, folder / std::to_string(fd++));
  CHECK(labkit::child::gpu_device_files(folder.string()) == 3);
  fs::remove_all(folder);
  CHECK(labkit::child::gpu_device_files(folder.string()) == 0);  // a process that has ended
}

TEST_CASE("a call's buffers are mapped once each: values and buffers already mapped are skipped") {
  labkit::wire::Request call;
  const auto pointer = [](std::uint64_t id) {
    labkit::wire::Argument argument;
    argument.kind = labkit::wire::ArgumentKind::pointer;
    argument.bits = id;
    return argument;
  };
  labkit::wire::Argument value;
  value.bits = 9;  // a value whose bits equal an id is still a value
  const labkit::wire::Argument arguments[] = {pointer(7), value, pointer(8), pointer(7), pointer(5)};
  for (const auto& argument : arguments) call.arguments[call.argument_count++] = argument;
  CHECK(labkit::child::buffers_to_map(call, {5}) == std::vector<std::uint64_t>{7, 8});
  CHECK(labkit::child::buffers_to_map(call, {5, 7, 8}).empty());
}

TEST_CASE("a stage request names the managed buffer it resets, and an empty call's managed inputs are mapped too") {
  const labkit::wire::Request stage = labkit::child::stage_request(42);
  CHECK(stage.op == labkit::wire::Op::stage);
  CHECK(stage.id == 42);
  CHECK(stage.argument_count == 0);
  // The empty call names the rehearsal's managed buffers as pointer arguments, so that its host
  // maps them like a call's (and copies them into managed memory before its kernel).
  labkit::wire::Request noop;
  noop.op = labkit::wire::Op::noop;
  noop.arguments[0].kind = labkit::wire::ArgumentKind::pointer;
  noop.arguments[0].bits = 3;
  noop.argument_count = 1;
  CHECK(labkit::child::buffers_to_map(noop, {}) == std::vector<std::uint64_t>{3});
}

TEST_CASE("a running process is pinned to a CPU with every thread it has, not its main thread alone") {
  cpu_set_t allowed;
  REQUIRE(sched_getaffinity(0, sizeof allowed, &allowed) == 0);
  int cpu = 0;
  while (!CPU_ISSET(cpu, &allowed)) ++cpu;
  std::promise<pid_t> started;
  std::promise<void> finish;
  std::thread other([&] {
    started.set_value(gettid());
    finish.get_future().wait();
  });
  const pid_t other_tid = started.get_future().get();
  labkit::child::pin_to_cpu(getpid(), cpu);
  cpu_set_t pinned;
  REQUIRE(sched_getaffinity(other_tid, sizeof pinned, &pinned) == 0);
  CHECK(CPU_COUNT(&pinned) == 1);
  CHECK(CPU_ISSET(cpu, &pinned));
  finish.set_value();
  other.join();
  sched_setaffinity(0, sizeof allowed, &allowed);
}
