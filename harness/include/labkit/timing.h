// GPU timing, following nvbench and GPU MODE's evaluator: CUDA events around each call,
// warm-up, an L2 flush and a persisting-L2 reset before every sample, the whole device
// synchronised so work hidden on other streams still counts, and samples until the mean
// is known to 0.5%.
#pragma once

#include "labkit/stats.h"

#include <cuda_runtime.h>

#include <chrono>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace labkit {

struct TimingStats {
  SampleSummary ms;              // per-call milliseconds: the figure that is scored
  double sm_clock_mhz = 0;       // measured while timing, to spot a throttled GPU
  bool off_stream_work = false;  // in-process only: wall clock far above the events in most samples
  // A submission's call, timed in its own process (time_submission_call):
  bool remote = false;
  bool confirmed = true;             // most samples' reports were confirmed by our clock
  double reported_ms = 0;            // median of what its process reported
  double unexplained_ms = 0;         // median of our clock's bound less the report, per sample
  std::size_t unconfirmed_samples = 0;  // samples that scored our clock's bound instead
  std::size_t impossible_samples = 0;   // reports that were no time at all (negative, zero, past the window)
  double empty_ceiling_ms = 0;          // the most an empty call's overhead may count (0: no ceiling)
  std::size_t ceiled_empty_calls = 0;   // empty calls that took longer than that
  double stopped_after_ms = 0;          // calls stopped at StoppingRule::give_up_ms (0: none) count as that long
  // Where the host's time went over the samples (the log shows it: what a class's grading
  // rate pays per sample beyond the calls themselves).
  double preparing_seconds = 0;  // drawing inputs, the empty call
  double calling_seconds = 0;    // the submission's windows
  double checking_seconds = 0;   // verifying each sample's output
};

// One empty call through a host that runs no submission, spinning as long as an honest call
// would: returns the device time the host reported, so that our clock's view of it less that
// is what an honest call's window costs beyond its own work.
using RoundTripProbe = std::function<double()>;

struct TimedCall {
  std::function<void(cudaStream_t)> launch;  // the call being timed
  std::function<void(int sample)> prepare;   // untimed: draw a fresh input, poison outputs
  std::function<std::string()> verify;       // untimed, after every sample when set: "" if the output is right
  // The two ends of a submission's timed window (labkit/fresh_input.h): `reveal` makes the
  // drawn input visible to the call, `collect` copies the output out of its reach. With
  // `rehearsal` true each moves the same bytes between buffers the call never sees, for the
  // round-trip probe. Both run on the buffers' devices; the timing loop synchronises.
  std::function<void(bool rehearsal)> reveal, collect;
  // Time by the host's clock from the call to the end of all work on every device, not by
  // events on one stream: for calls whose work spans several GPUs or streams of their own,
  // or copies through host memory (labs 11-13). Costs a few microseconds of launch overhead
  // per call, so single-stream labs keep events.
  bool host_clock = false;
  // Untimed, before a sample's windows (time_call: before the reveal; a submission's call:
  // before its empty call and its call): managed inputs get managed memory, reset, whose pages
  // are on the host (labkit/managed_memory.h), in the call's host and the empty call's alike.
  std::function<void()> stage;
  // The managed inputs the rehearsal revealed (labkit/fresh_input.h): the empty call copies
  // them into managed memory as the call's host copies the call's, inside its window.
  std::function<std::vector<const void*>()> rehearsed_managed_inputs;
};

// Thrown when `verify` finds a sample's output wrong.
struct WrongDuringTiming : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// GPU work of another process's, run before each sample's L2 flush, so that the GPU switches
// away from this context and back before the call, as it does before a submission's call (the
// checks reveal its input in their context, then its host flushes and calls in its own). The
// checks time the reference with it; the benchmarks, timing kernels side by side, without.
using WorkElsewhere = std::function<void()>;

TimingStats time_call(const TimedCall& call, const StoppingRule& rule = {}, const WorkElsewhere& work_elsewhere = {});

// Times a call that runs in the submission's process (labkit/remote.h). Its own events give
// the precise figure, but that process is not trusted. Our clock runs from before the input
// is revealed to after the output is collected, so every piece of GPU work that the answer
// depends on, on any stream, context or process, lies inside it. That window less the window
// of an empty call (`probe`, run just before each sample so that it waits through the same
// verification and wakes as cold as the submission's process) bounds the call from below.
//
// Each sample scores its report only where our clock confirms it (sample_time); otherwise the
// bound. The empty call's overhead counts at most `empty_ceiling_ms`
// (measure_empty_call_ceiling_ms, taken while no process of the submission's exists), so no
// work or signal of the submission's can inflate it and shrink the bound. The scored time is
// the median of the samples' times, and its spread is the median's
// (SampleSummary::median_relative_error). Every sample's output is verified.
TimingStats time_submission_call(const TimedCall& call, const RoundTripProbe& probe, double empty_ceiling_ms,
                                 const StoppingRule& rule = {});

// The most an empty call's overhead may count for this call (empty_call_ceiling_ms over a few
// clean empty calls): the caller ends every process of the submission's first.
double measure_empty_call_ceiling_ms(const TimedCall& call, const RoundTripProbe& probe);

// How well the gap between our clock and the events must be known before timing stops (two
// standard errors): the round trip of a process that slept through verification jitters by
// tens of microseconds, so a short call needs many samples to be confirmed or refuted.
inline double confirmation_precision_ms(double reported_ms) { return 0.005 + 0.025 * reported_ms; }

// What every timed sample starts with, untimed: an L2 flush, a reset of persisting lines,
// and the whole device idle. Then the round-trip probe, then the timed call: each starts with
// the GPU switching to another process's context, whose host flushes again in its own.
void prepare_device_for_sample();

inline double gigabytes_per_second(double bytes, double ms) { return bytes / (ms * 1e-3) / 1e9; }

// Milliseconds by the host's clock while `body` runs: for what events cannot time (work on
// several GPUs or streams that the body waits for itself). The kit's one host clock.
template <class Body>
double host_clock_ms(Body&& body) {
  const auto start = std::chrono::steady_clock::now();
  body();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

// Device memory read bandwidth in GB/s, measured once per process by a read-only kernel
// over a buffer far larger than L2. The "% of peak" figures are relative to this.
double measured_read_bandwidth_gbps();

// The SM clock in MHz: a kernel counts clock64() cycles over an event-timed interval.
double measure_sm_clock_mhz();

}  // namespace labkit
