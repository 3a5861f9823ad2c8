// What the lab runner's sources share: lab.cpp (the case loops, verdicts and the GPU's
// locks), performance.cpp (timing a case against the reference) and runner_main.cpp (start-up
// and doctest). Not part of the labs' API (labkit/lab.h).
#pragma once

#include "labkit/calibration.h"
#include "labkit/dataset.h"
#include "labkit/lab.h"
#include "labkit/protocol.h"
#include "labkit/remote.h"
#include "labkit/results.h"

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace labkit::runner {

using RunnerOptions = protocol::RunnerArguments;

struct RunnerState {
  RunnerOptions options;
  std::unique_ptr<HostProcess> student;
  std::unique_ptr<Module> reference;
  Dataset dataset;
  Calibration calibration;
  int correctness_failures = 0;
  bool sandbox_reported = false;
  // `grade export` on a machine that cannot run the lab (no GPU): the checks run only as far
  // as the CPU takes them, for the arrays they export first; nothing is a verdict.
  bool export_without_gpu = false;
  std::vector<std::string> exported;
};

RunnerState& state();

// Seconds since the runner started: each case's line in the run log carries it, so a slow
// case (or a slow start) shows where a run's time went.
double seconds_running();

template <class T>
const T& loaded(const std::unique_ptr<T>& item, const char* what) {
  if (!item) throw std::logic_error(std::string("the runner was started without --") + what);
  return *item;
}

// While one lives, the grader's time limit does not count this runner's time: it waits for
// others or does the grader's own work (protocol::ClockRecord). So a submission's verdict
// does not depend on how many labs share its GPU or whether the reference's times were cached.
class ClockStopped {
 public:
  explicit ClockStopped(const char* why, bool to_time = false) {
    emit_result(protocol::ClockRecord{false, why, to_time});
  }
  ~ClockStopped() { emit_result(protocol::ClockRecord{true, ""}); }
  ClockStopped(const ClockStopped&) = delete;
  ClockStopped& operator=(const ClockStopped&) = delete;
};

// The GPUs' lock files, opened at the start (lab.cpp says how the locks are held).
std::vector<int>& gpu_lock_fds();
// Takes every lock `how` (LOCK_SH or LOCK_EX) with the clock stopped, and logs a long wait.
void lock_gpus_uncounted(int how);
// Starts the empty call's host (performance.cpp) while this run still shares the GPU: its
// start, a CUDA context made one at a time across the machine (docs/grader-measurements.md
// measures one), then costs nothing of the time the GPU is held alone.
void start_empty_call_host();

void report_sandbox_once();
// Tells the grader what is starting, so that a person at a terminal sees it (harness/grade/progress.h).
void report_progress(const Case& c, const char* stage);
// After an error such as an illegal address in the checks' own context every later CUDA call
// fails: context_lost says so, and stop_after_lost_context ends the runner.
bool context_lost();
[[noreturn]] void stop_after_lost_context();

}  // namespace labkit::runner
