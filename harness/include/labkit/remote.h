// The checks' side of the host (labkit/host.h): a process that runs the submission's code,
// started on first use and again after it dies, and typed calls into it. A lab's checks call
// `labkit::student<decltype(histogram)>("histogram")(d_in, n, d_bins, stream)` as if the
// function were local; the call returns once the work has finished on the device, and a
// crash, hang or CUDA error in the submission becomes an exception with a message for the
// student, never a lost checker.
#pragma once

#include "labkit/cuda_check.h"
#include "labkit/outcome.h"
#include "labkit/shared_memory.h"
#include "labkit/wire.h"

#include <sys/resource.h>
#include <sys/types.h>

#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace labkit {

// Something the submission's process did that ends the call: the message says what.
// The submission's process failed a call: `outcome` says how the case ends (failed; hung: the
// call never returned; not run: refused after earlier hangs).
class SubmissionFailure : public std::runtime_error {
public:
  explicit SubmissionFailure(const std::string& message, protocol::Outcome outcome = protocol::Outcome::failed)
      : std::runtime_error(message), outcome_(outcome) {}
  protocol::Outcome outcome() const { return outcome_; }

private:
  protocol::Outcome outcome_;
};

// A timed call still running when the timing loop's limit for it passed (RemoteTiming::
// give_up_ms): stopped, as slow past any speed credit. Not a hang, and no verdict of its own.
class TimedCallStopped : public std::runtime_error {
public:
  explicit TimedCallStopped(double after_ms)
      : std::runtime_error("a timed call stopped after " + std::to_string(after_ms) + " ms"), after_ms_(after_ms) {}
  double after_ms() const { return after_ms_; }

private:
  double after_ms_;
};

struct HostOptions {
  std::string executable;  // the lab's host program
  std::string module;      // the compiled submission; empty for a host that runs none
  double call_seconds = 5;           // a call still running after this is a hang
  double start_seconds = 60;         // loading the module (constructors included)
  std::vector<std::string> forbidden_libraries;  // file-name stems that must never be mapped
  int max_hangs = 2;  // after this many hangs, further calls are refused at once
  // A tool the host runs under (compute-sanitizer, ncu): its command line, put before the
  // host's own. "{start}" in an argument becomes the ordinal of this start (1, 2...), so that
  // each process the tool watches writes its own log. Empty: the host runs alone.
  std::vector<std::string> wrapper;
  double wrapper_exit_seconds = 30;  // how long stop() lets the tool write its results (not after a hang)
};

class HostProcess {
public:
  explicit HostProcess(HostOptions options);
  ~HostProcess();
  HostProcess(const HostProcess&) = delete;
  HostProcess& operator=(const HostProcess&) = delete;

  // Sends the buffers the request points into (first use only), then the request, and waits
  // for the reply. A CUDA error throws CudaError and a crash, hang or refusal throws
  // SubmissionFailure; either way the process is replaced before the next request.
  // `give_up_ms` (0: none), below the hang limit: a call still running then is stopped and
  // TimedCallStopped thrown.
  wire::Reply request(const wire::Request& request, double give_up_ms = 0);
  void stop();  // ends the process now; the next request starts a fresh one
  // Starts the process now when none is running (a request would start it anyway): for a
  // start paid before the time it would otherwise take.
  void ensure_running();
  // Untimed, before a timed call's window opens: every managed buffer the process has mapped
  // has its managed memory reset, its pages back on the host (wire::Op::stage). Nothing when the
  // process is not running: a fresh one resets its copies at its first call.
  void stage_managed();
  // Runs the process, and those started after it, on `cpu` alone (child::timing_cpu).
  void pin_to_cpu(int cpu);
  // A forbidden library mapped into the process, or a CUDA context of its own, ends the call
  // (SubmissionFailure). Every request runs it, but a timed one leaves it to the timing loop,
  // after the window: reading the process's memory map takes 50-100 us that are no part of
  // the call.
  void check_process();

  const std::string& sandbox() const { return sandbox_; }      // from the host's greeting
  const std::string& forbidden_seen() const { return forbidden_seen_; }
  double last_wall_ms() const { return last_wall_ms_; }        // of the last request, our clock

private:
  void start();
  pid_t fork_host() const;
  void send(const wire::Request& request, int fd = -1);
  wire::Reply receive(double seconds, const char* doing);
  bool reply_within(double seconds);  // something (a reply, or the end of the process) arrived in time
  [[noreturn]] void died(const char* doing);
  void map_buffers(const wire::Request& request);
  void unmap_freed();
  std::vector<std::string> command_line() const;
  void wait_for_wrapper();
  static int open_output();
  rlim_t output_cap() const;
  void copy_output_to_log();

  HostOptions options_;
  pid_t pid_ = -1;
  int socket_ = -1;
  int output_ = -1;  // what the submission prints (open_output)
  std::string scratch_;
  std::string sandbox_;
  std::string forbidden_seen_;
  std::set<std::uint64_t> mapped_;
  std::set<std::uint64_t> managed_;  // the mapped buffers of MemoryKind::managed
  int hangs_ = 0;
  int starts_ = 0;
  bool hung_ = false;  // the last call never returned: a tool's host is killed at once, not waited for
  double last_wall_ms_ = 0;
  int cpu_ = -1;
};

// Set by the timing loop while it measures one call of the submission's: the call asks the
// host for events around the work, and both the host's figure and our wall clock are kept.
struct RemoteTiming {
  bool host_clock = false;  // in: ask the host for its clock instead of events (TimedCall)
  double give_up_ms = 0;    // in: a call still running after this is stopped (0: the hang limit)
  HostProcess* host = nullptr;  // the process the call ran in
  int calls = 0;
  double event_ms = 0;
  double wall_ms = 0;
};
RemoteTiming*& current_remote_timing();

// Makes `timing` the current one for its lifetime (exceptions included).
class RemoteTimingScope {
public:
  explicit RemoteTimingScope(RemoteTiming& timing) { current_remote_timing() = &timing; }
  ~RemoteTimingScope() { current_remote_timing() = nullptr; }
  RemoteTimingScope(const RemoteTimingScope&) = delete;
  RemoteTimingScope& operator=(const RemoteTimingScope&) = delete;
};

template <class T>
wire::Argument encode_argument(T value) {
  wire::Argument argument;
  if constexpr (std::is_same_v<T, cudaStream_t>) {
    argument.kind = wire::ArgumentKind::stream;
  } else if constexpr (std::is_pointer_v<T>) {
    if (value == nullptr) {
      argument.kind = wire::ArgumentKind::null_pointer;
    } else {
      const SharedLocation location = locate_shared(value);
      argument.kind = wire::ArgumentKind::pointer;
      argument.bits = location.id;
      argument.offset = location.offset;
    }
  } else {
    argument.bits = wire::to_bits(value);
  }
  return argument;
}

wire::Reply call_in_host(HostProcess& host, wire::Request& request);  // fills `timed`, records timing

// A request to call the contract function `function` with `args`, encoded for the wire: what
// a host or an MPI rank is sent.
template <class... Args>
wire::Request call_request(const char* function, Args... args) {
  static_assert(sizeof...(Args) <= wire::max_arguments, "too many arguments for the wire format");
  wire::Request request;
  request.op = wire::Op::call;
  wire::set_text(request.function, sizeof request.function, function);
  request.argument_count = sizeof...(Args);
  std::size_t next = 0;
  ((request.arguments[next++] = encode_argument<Args>(args)), ...);
  return request;
}

template <class Fn>
class RemoteFunction;

// A contract function as the checks see it: same signature, run in the host. The stream
// argument is ignored (the host uses its own), and the call is synchronous.
template <class R, class... Args>
class RemoteFunction<R(Args...)> {
public:
  RemoteFunction(HostProcess& host, std::string name) : host_(&host), name_(std::move(name)) {}

  R operator()(Args... args) const {
    wire::Request request = call_request<Args...>(name_.c_str(), args...);
    const wire::Reply reply = call_in_host(*host_, request);
    if constexpr (!std::is_void_v<R>) return wire::from_bits<R>(reply.return_bits);
  }

private:
  HostProcess* host_;
  std::string name_;
};

}  // namespace labkit
