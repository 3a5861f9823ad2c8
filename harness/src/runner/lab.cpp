// The lab runner's cases: the trusted side of a lab's checks runs each correctness case,
// reports its verdict, and holds the GPU's lock (shared to check, alone to time). Timing a case
// is performance.cpp's; starting the runner and doctest, runner_main.cpp's.
#include "labkit/lab.h"

#include "labkit/gpu_lock.h"
#include "labkit/protocol.h"
#include "labkit/results.h"

#include "child_process.h"
#include "runner.h"

#include <dlfcn.h>
#include <sys/file.h>

#include <chrono>
#include <cstdio>
#include <filesystem>

namespace labkit {

namespace runner {

RunnerState& state() {
  static RunnerState s;
  return s;
}

double seconds_running() {
  static const auto started = std::chrono::steady_clock::now();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
}

void report_sandbox_once() {
  HostProcess& host = *state().student;
  if (state().sandbox_reported || host.sandbox().empty()) return;
  state().sandbox_reported = true;
  emit_result(protocol::SandboxRecord{host.sandbox()});
}

// Rather than fail every remaining case once the checks' own context is lost, the runner stops
// and lets the grader run them again in fresh processes. (The submission's errors happen in
// its own process.)
void stop_after_lost_context() {
  std::fflush(stdout);
  std::_Exit(protocol::exit_status::context_lost);
}

bool context_lost() {
  cudaGetLastError();
  return cudaDeviceSynchronize() != cudaSuccess;
}

void report_progress(const Case& c, const char* stage) {
  emit_result(protocol::ProgressRecord{c.kind, c.name, stage});
}

// The grader may run several labs on one GPU at once (LABKIT_GPU_LOCK names that GPU's lock
// file, or every GPU's, separated by ':', for a lab that runs on several). Checking
// correctness shares a GPU; timing must have it alone. So a runner holds its locks shared
// from its start and exclusive from its first timed case to its end, and a runner that waits
// for one exclusive has given up its shared hold on it first (flock converts by unlocking).
// A runner of one GPU holds one lock, and the grader runs one several-GPU lab at a time,
// which takes its locks in order: no two runners ever wait for each other.
// The locks are opened once, at the runner's start (open_gpu_locks: one that cannot be opened
// stops the runner with a fault, as timing without it would not have the GPU alone).
std::vector<int>& gpu_lock_fds() {
  static std::vector<int> fds;
  return fds;
}

// The log says how long each wait took: what a batch's rate loses to the GPU's lock. Where
// timing begins it always says so, waited or not (grading/tools/pass-timeline.py reads it).
void lock_gpus_uncounted(int how) {
  const double asked = seconds_running();
  {
    const bool to_time = how == LOCK_EX;
    const ClockStopped waiting(to_time ? "waiting for the GPU alone, to time: other labs are checking or timing on it"
                                       : "waiting for the GPU: another lab is timing on it",
                               to_time);
    lock_gpus(gpu_lock_fds(), how);
  }
  if (const double waited = seconds_running() - asked; waited >= 0.1 || how == LOCK_EX)
    std::printf("[%7.2f s] the GPU %s after %.2f s waiting\n", seconds_running(),
                how == LOCK_EX ? "alone, for timing," : "shared, for checking,", waited);
}

}  // namespace runner

using protocol::Outcome;
using runner::context_lost;
using runner::loaded;
using runner::lock_gpus_uncounted;
using runner::report_progress;
using runner::report_sandbox_once;
using runner::RunnerState;
using runner::seconds_running;
using runner::state;
using runner::stop_after_lost_context;

Module::Module(const std::string& path) : path_(path) {
  handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle_ == nullptr) throw std::runtime_error("cannot load " + path + ": " + dlerror());
}

Module::~Module() {
  // Left loaded on purpose: CUDA tears down kernels of unloaded modules at exit anyway, and
  // unloading them first can crash the runtime's own clean-up.
}

void* Module::symbol(const char* name) const {
  dlerror();
  void* address = dlsym(handle_, name);
  if (address == nullptr) throw std::runtime_error(std::string(name) + " is not defined in " + path_);
  return address;
}

HostProcess& student_process() {
  if (!state().student) throw std::logic_error("the runner was started without --student");
  return *state().student;
}

void poison_student_shared_memory(std::uint32_t pattern) {
  wire::Request request;
  request.op = wire::Op::poison_shared_memory;
  request.pattern = pattern;
  student_process().request(request);
}

const Module& reference_module() { return loaded(state().reference, "reference"); }
const Dataset& dataset() { return state().dataset; }
const std::string& export_dir() { return state().options.export_dir; }
bool profiling() { return state().options.profile; }
void note_exported(const std::string& path) { state().exported.push_back(path); }
void make_directories(const std::string& path) { std::filesystem::create_directories(path); }

// A correctness case's outcome, on the channel, in the run log and to doctest: a failure (or
// a hang) fails the doctest check; a case that could not run is only a message.
static void report_case(const Case& c, Outcome outcome, const std::string& message) {
  if (state().export_without_gpu) return;
  if (state().student) report_sandbox_once();
  if (protocol::is_failure(outcome) && c.kind == "correctness") ++state().correctness_failures;
  emit_result(protocol::CorrectnessRecord{c.name, outcome, message});
  std::printf("[%7.2f s] %-28s %s\n", seconds_running(), c.name.c_str(),
              outcome == Outcome::not_run ? message.c_str() : protocol::to_string(outcome));
  if (outcome == Outcome::not_run)
    MESSAGE(c.name << ": " << message);
  else
    CHECK_MESSAGE(outcome == Outcome::passed, c.name << " (" << c.label() << "): " << message);
}

void verdict(const Case& c, bool passed, const std::string& message) {
  report_case(c, passed ? Outcome::passed : Outcome::failed, message);
}

void not_run(const Case& c, const std::string& why) {
  if (c.kind != "performance") return report_case(c, Outcome::not_run, why);
  emit_result(protocol::PerformanceRecord{c.name, Outcome::not_run, why});
  std::printf("[%7.2f s] %-24s %s\n", seconds_running(), c.name.c_str(), why.c_str());
  MESSAGE(c.name << ": " << why);
}


void for_each_correctness_case(const std::function<void(const Case&)>& check, const CaseFilter& selected) {
  for (const Case& c : dataset().correctness) {
    if (selected && !selected(c)) continue;
    SUBCASE(c.name.c_str()) { run_case(c, [&] { check(c); }); }
  }
}

void for_each_timed_case(const std::function<void(const Case&)>& time, const CaseFilter& selected) {
  for (const Case& c : dataset().performance) {
    if (selected && !selected(c)) continue;
    SUBCASE(c.name.c_str()) {
      if (timing_wanted(c)) time(c);
    }
  }
}

void run_case(const Case& c, const std::function<void()>& body) {
  if (state().export_without_gpu) {  // runs the case until its first CUDA call fails
    try {
      body();
    } catch (const std::exception&) {  // that call: expected here
    }
    return;
  }
  report_progress(c, "checking");
  try {
    body();
  } catch (const SubmissionFailure& failure) {  // the submission's process: failed, hung or refused
    report_case(c, failure.outcome(), failure.what());
    if (context_lost()) stop_after_lost_context();
  } catch (const std::exception& error) {
    verdict(c, false, error.what());
    if (context_lost()) stop_after_lost_context();
  }
}

void hold_gpu_alone() {
  static bool holding_alone = false;
  if (!holding_alone) lock_gpus_uncounted(LOCK_EX);
  holding_alone = true;
}

bool timing_wanted(const Case& c) {
  const RunnerState& s = state();
  if (s.options.calibrate || s.options.time_failed || s.correctness_failures == 0) {
    if (!s.options.calibrate && !s.options.profile) runner::start_empty_call_host();
    hold_gpu_alone();
    return true;
  }
  const std::string why = "not timed: " + std::to_string(s.correctness_failures) + " correctness case(s) failed";
  emit_result(protocol::PerformanceRecord{c.name, Outcome::not_run, why});
  std::printf("[%7.2f s] %-24s %s\n", seconds_running(), c.name.c_str(), why.c_str());
  return false;
}

}  // namespace labkit
