// What the host gives up before it loads a submission's code. Each step is the kernel's own
// mechanism, applied to the host process alone:
//   - run as an unprivileged user (nobody) when started as root, so the submission cannot
//     signal, trace or read the memory of the grader's processes, and no new privileges;
//   - no signal to any process outside the sandbox, where the kernel can scope signals
//     (Landlock ABI 6, Linux 6.12+); the grader also starts a submission's host in a PID
//     namespace of its own where it may (as root), which shows it no other process at all;
//   - Landlock (Linux 5.13+): read access only to the system's libraries and configuration,
//     the driver's files, and the submission's own module; writes only to a scratch folder.
//     The kit's sources and build (the reference solutions), the grader's reports and other
//     submissions' folders cannot be opened, and Landlock also forbids tracing processes
//     outside the sandbox (/proc/PID/mem, environ, fd).
// Where the kernel lacks Landlock, the host says so and the report shows it.
#pragma once

#include <string>
#include <vector>

namespace labkit {

struct SandboxPolicy {
  std::vector<std::string> readable_files;  // the submission's module
  std::string scratch_dir;                  // the only place it may create and remove files
  std::vector<std::string> writable_paths;  // files beneath that it may also write (the MPI launcher's /proc)
  // Landlock's signal scope (Linux 6.12+, ABI 6): no signal to a process outside this sandbox.
  // A host's, not an MPI launcher's, which signals the ranks it starts.
  bool scope_signals = false;
  // Keep the user that started it: a host that runs no submission (the grader's empty call),
  // which as root then stays out of reach of the submission's user.
  bool keep_user = false;
};

// Gives up root for user nobody (kept under ncu, which reads the GPU's counters). A host calls it
// before CUDA starts: what the driver and a tool's injected code set up at start-up then belong
// to the user who uses them later. Started as root, a host under compute-sanitizer that changed
// user after CUDA started hung at its first finding (H100). enter_sandbox calls it too.
void leave_root();

// Applies the policy to this process. Returns a one-line description of what is in force
// ("uid 65534 (nobody), Landlock ABI 7"); throws when a step that should work fails.
std::string enter_sandbox(const SandboxPolicy& policy);

}  // namespace labkit
