// What the runner's two kinds of child, a lab's host (remote.cpp) and MPI ranks under mpirun
// (rank_group.cpp), are started with: a scratch folder they may write as nobody, and an
// environment that says where programs, libraries and GPUs are and carries nothing else of the
// grader's (no secret, no result channel, no token).
#pragma once

#include "labkit/wire.h"

#include <sys/types.h>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace labkit::child {

constexpr uid_t nobody = 65534;  // who a child runs as when the runner is root

double now_ms();

// A fresh "/tmp/labkit-<kind>-XXXXXX", handed to nobody when we are root.
std::string make_scratch(const std::string& kind);

bool starts_with(const std::string& text, const char* prefix);

// HOME, TMPDIR and CUDA's cache in `scratch`, and of `ours` (an environ) only PATH,
// LD_LIBRARY_PATH, CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER.
std::vector<std::string> base_environment(const std::string& scratch, char** ours);

// argv/envp for execve: the strings' pointers, then a null.
std::vector<char*> pointers(std::vector<std::string>& strings);

// The CPU a timing runner's two hosts (the submission's and the empty call's) run on, and that
// the runner leaves to them: they take turns, so on one core they wake alike and the empty
// call's overhead is the call's. Runners of different GPUs (CUDA_VISIBLE_DEVICES) get
// different CPUs, counted from the last one this process may use; -1 where it may use one.
int timing_cpu();

// GPU device files (/dev/nvidia0, /dev/nvidia1...; not nvidiactl or nvidia-uvm) held open by
// the process whose descriptors `fd_folder` lists (/proc/PID/fd).
int gpu_device_files(const std::string& fd_folder);

// The shared buffers (labkit/shared_memory.h) a child maps: before a call, each pointer
// argument of `call` that is not in `mapped` yet, once; after the checks free a buffer, it
// leaves the child too, or the child would keep its memory.
std::vector<std::uint64_t> buffers_to_map(const wire::Request& call, const std::set<std::uint64_t>& mapped);
std::vector<std::uint64_t> freed_buffers(const std::set<std::uint64_t>& mapped);

// The request that maps shared buffer `id` in a child, with the descriptor that travels beside
// it (the sender closes it once sent), and the one that unmaps it.
struct MapRequest {
  wire::Request request;
  int fd = -1;
};
MapRequest map_request(std::uint64_t id);
wire::Request unmap_request(std::uint64_t id);
// The request that resets managed buffer `id`'s managed memory in a child (wire::Op::stage).
wire::Request stage_request(std::uint64_t id);

// Confines process `pid`, every thread of it (0: this thread alone), to `cpu`; or this process
// to every CPU it may use but `cpu`.
void pin_to_cpu(pid_t pid, int cpu);
void leave_cpu(int cpu);

}  // namespace labkit::child
