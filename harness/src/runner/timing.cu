#include "labkit/timing.h"

#include "labkit/buffer.h"
#include "labkit/defences.h"
#include "labkit/device.h"
#include "labkit/read_only.cuh"
#include "labkit/remote.h"
#include "labkit/sample_start.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <thread>

namespace labkit {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

__global__ void spin_kernel(long long cycles, long long* elapsed) {
  const long long start = clock64();
  long long now = start;
  while (now - start < cycles) now = clock64();
  *elapsed = now - start;
}

struct EventPair {
  EventPair() {
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
  }
  ~EventPair() {
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
  }
  float elapsed_ms() const {
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    return ms;
  }
  cudaEvent_t start{}, stop{};
};

cudaStream_t timing_stream() {
  static cudaStream_t stream = [] {
    cudaStream_t s;
    CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    return s;
  }();
  return stream;
}

// Wall-clock time past the event time that counts as work on another stream.
double off_stream_threshold_ms(double event_ms) { return std::max(0.05, 0.25 * event_ms); }

// Untimed, before every in-process sample: the call's own preparation (an input drawn and
// revealed, outputs poisoned), the work elsewhere if any, then an L2 flush and a reset of
// persisting lines, then the whole device idle.
void prepare_sample(const TimedCall& call, int sample, const WorkElsewhere& work_elsewhere) {
  if (call.prepare) call.prepare(sample);
  if (call.stage) call.stage();
  if (call.reveal) call.reveal(false);
  if (work_elsewhere) {
    synchronize_all_devices();
    work_elsewhere();
  }
  prepare_device_for_sample();
}

void collect_output(const TimedCall& call, bool rehearsal) {
  if (!call.collect) return;
  call.collect(rehearsal);
  synchronize_all_devices();
}

// Our clock around one timed window of the submission's: the input revealed, L2 flushed (the
// copy left its tail there), the body (the call, or the probe's empty call), the output
// collected. Every step waits for every device, so the window ends with the GPUs idle.
template <class Body>
double window_ms(const TimedCall& call, bool rehearsal, Body body) {
  const auto start = Clock::now();
  if (call.reveal) call.reveal(rehearsal);
  prepare_device_for_sample();
  body();
  collect_output(call, rehearsal);
  return 1e3 * seconds_since(start);
}

// What a window costs beyond the work inside it, for an empty call through the probe's host.
double probe_overhead_ms(const TimedCall& call, const RoundTripProbe& probe) {
  double device_ms = 0;
  const double wall_ms = window_ms(call, true, [&] { device_ms = probe(); });
  return wall_ms - device_ms;
}

// LABKIT_TIMING_TRACE=FILE appends each timed call's clocks to FILE: what to look at when
// the grader's clock and a submission's events disagree.
void trace_sample(int sample, const RemoteTiming& timing, double empty_overhead_ms) {
  static std::FILE* trace = [] {
    const char* path = std::getenv("LABKIT_TIMING_TRACE");
    return path != nullptr ? std::fopen(path, "a") : nullptr;
  }();
  if (trace == nullptr) return;
  std::fprintf(trace, "sample %d events %.4f ms window %.4f ms empty call's overhead %.4f ms unexplained %.4f ms\n",
               sample, timing.event_ms, timing.wall_ms, empty_overhead_ms,
               timing.wall_ms - empty_overhead_ms - timing.event_ms);
  std::fflush(trace);
}

void trace_clean_overheads(const std::vector<double>& overheads, double ceiling) {
  static std::FILE* trace = [] {
    const char* path = std::getenv("LABKIT_TIMING_TRACE");
    return path != nullptr ? std::fopen(path, "a") : nullptr;
  }();
  if (trace == nullptr) return;
  std::fprintf(trace, "empty call's overheads with no submission process:");
  for (double overhead : overheads) std::fprintf(trace, " %.4f", overhead);
  std::fprintf(trace, " ms; ceiling %.4f ms\n", ceiling);
  std::fflush(trace);
}

void verify_sample(const TimedCall& call, std::size_t sample) {
  if (!call.verify) return;
  const std::string error = call.verify();
  if (!error.empty())
    throw WrongDuringTiming("output wrong on timed call " + std::to_string(sample + 1) + ": " + error);
}

}  // namespace

void prepare_device_for_sample() {
  flush_l2(timing_stream());
  synchronize_all_devices();
}

TimingStats time_call(const TimedCall& call, const StoppingRule& rule, const WorkElsewhere& work_elsewhere) {
  const cudaStream_t stream = timing_stream();
  EventPair events;

  for (int warmup = 0; warmup < 2; ++warmup) {
    prepare_sample(call, -1 - warmup, work_elsewhere);  // its poisoning (legacy stream) ends before the launch
    call.launch(stream);
    CUDA_CHECK_KERNELS(stream);
    synchronize_all_devices();
    collect_output(call, false);
  }

  TimingStats stats;
  std::vector<double> samples;
  std::size_t off_stream_samples = 0;
  const auto started = Clock::now();
  for (int sample = 0;; ++sample) {
    prepare_sample(call, sample, work_elsewhere);
    const auto wall_start = Clock::now();
    CUDA_CHECK(cudaEventRecord(events.start, stream));
    call.launch(stream);
    CUDA_CHECK(cudaEventRecord(events.stop, stream));
    synchronize_all_devices();  // every device: other streams' and GPUs' work counts too
    const double wall_ms = 1e3 * seconds_since(wall_start);
    CUDA_CHECK(cudaGetLastError());
    collect_output(call, false);

    // Past the events by more than launch overhead: work ran where the events cannot see it
    // (another stream), or the host stalled. Either way the wall clock is the honest time.
    double ms = call.host_clock ? wall_ms : events.elapsed_ms();
    if (!call.host_clock && wall_ms - ms > off_stream_threshold_ms(ms)) {
      ++off_stream_samples;
      ms = wall_ms;
    }
    samples.push_back(ms);
    verify_sample(call, samples.size() - 1);
    if (samples.size() % 10 == 0 || samples.size() < rule.min_samples) {
      stats.ms = summarize(samples);
      if (should_stop(rule, stats.ms, seconds_since(started))) break;
    }
  }
  // A host hiccup touches a sample now and then; hidden work touches most of them.
  stats.off_stream_work = 2 * off_stream_samples > samples.size();
  stats.sm_clock_mhz = measure_sm_clock_mhz();
  return stats;
}

namespace {

// The empty call's overheads with no process of the submission's alive: what the ceiling is
// made from. Each after a pause like the verification that a sample's empty call sleeps
// through; no input is drawn, as the empty call reads none (each window's L2 flush leaves the
// cache as full of written lines as a draw does).
std::vector<double> clean_empty_overheads(const TimedCall& call, const RoundTripProbe& probe) {
  constexpr int clean_samples = 15;
  std::vector<double> overheads;
  for (int sample = -1; sample < clean_samples; ++sample) {  // the first allocates the rehearsal's buffers
    synchronize_all_devices();
    if (call.stage) call.stage();  // managed inputs: the empty call's memory reset too
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    const double overhead = probe_overhead_ms(call, probe);
    if (sample >= 0) overheads.push_back(overhead);
  }
  return overheads;
}

// The stopping rule reads the relative error it is given: for a submission, the median's.
SampleSummary with_median_error(SampleSummary summary) {
  summary.relative_error = summary.median_relative_error;
  return summary;
}

}  // namespace

double measure_empty_call_ceiling_ms(const TimedCall& call, const RoundTripProbe& probe) {
  const std::vector<double> clean = clean_empty_overheads(call, probe);
  const double ceiling = empty_call_ceiling_ms(clean);
  trace_clean_overheads(clean, ceiling);
  return ceiling;
}

TimingStats time_submission_call(const TimedCall& call, const RoundTripProbe& probe, double ceiling,
                                 const StoppingRule& rule) {
  const cudaStream_t stream = timing_stream();
  TimingStats stats;
  stats.remote = true;
  stats.empty_ceiling_ms = std::isfinite(ceiling) ? ceiling : 0;

  auto measure_one = [&](int sample) {
    RemoteTiming timing;
    timing.host_clock = call.host_clock;
    timing.give_up_ms = rule.give_up_ms;
    double window = 0;
    try {
      window = window_ms(call, false, [&] {
        const RemoteTimingScope scope(timing);
        call.launch(stream);
      });
    } catch (const TimedCallStopped&) {
      // The stop took the process with it: a fresh one waits for the next window.
      if (timing.host != nullptr) timing.host->ensure_running();
      throw;
    }
    // A call through a host is bounded by the window; MPI ranks (no host) by the clock of the
    // rank group, which their launch has set already.
    if (timing.host != nullptr) timing.wall_ms = window;
    if (timing.calls != 1)
      throw std::logic_error("a timed launch must make exactly one call of the submission's (sample " +
                             std::to_string(sample) + " made " + std::to_string(timing.calls) + ")");
    if (timing.host != nullptr) timing.host->check_process();
    return timing;
  };
  auto start_sample = [&](int sample) {
    if (call.prepare) call.prepare(sample);
    synchronize_all_devices();
    // Before both windows, so that the empty call and the call copy their managed inputs into
    // memory in the same state: reset, its pages on the host.
    if (call.stage) call.stage();
    const double overhead = probe_overhead_ms(call, probe);
    if (overhead > ceiling) ++stats.ceiled_empty_calls;
    return std::min(overhead, ceiling);
  };
  // A call stopped at the rule's give_up_ms counts as that long (a warm-up's, as nothing: one
  // slow call is an outlier the median ignores), and its host starts again at once (measure_one);
  // a second stop ends the timing, the call being far past its credit again.
  int stopped_calls = 0;
  auto ends_timing = [&](const TimedCallStopped& stopped) {
    stats.stopped_after_ms = stopped.after_ms();
    return ++stopped_calls >= 2;
  };
  for (int warmup = 0; warmup < 2; ++warmup) {
    start_sample(-1 - warmup);
    try {
      measure_one(-1 - warmup);
    } catch (const TimedCallStopped& stopped) {
      if (!ends_timing(stopped)) continue;
      stats.ms = summarize({stopped.after_ms()});
      return stats;
    }
  }
  stats.ceiled_empty_calls = 0;

  // Per sample: what the process reported, our clock's bound, and what the sample scores.
  std::vector<double> reported, times, unexplained;
  const auto started = Clock::now();
  for (int sample = 0;; ++sample) {
    const auto preparing = Clock::now();
    const double empty_overhead_ms = start_sample(sample);
    const auto calling = Clock::now();
    stats.preparing_seconds += seconds_since(preparing);
    RemoteTiming timing;
    try {
      timing = measure_one(sample);
    } catch (const TimedCallStopped& stopped) {
      stats.calling_seconds += seconds_since(calling);
      const bool last = ends_timing(stopped);
      reported.push_back(stopped.after_ms());
      times.push_back(stopped.after_ms());
      unexplained.push_back(0);
      if (!last) continue;
      stats.ms = summarize(times);
      break;
    }
    stats.calling_seconds += seconds_since(calling);
    trace_sample(sample, timing, empty_overhead_ms);
    const SampleClocks clocks{timing.event_ms, timing.wall_ms, std::max(0.0, timing.wall_ms - empty_overhead_ms)};
    reported.push_back(clocks.reported_ms);
    times.push_back(sample_time(clocks));
    unexplained.push_back(clocks.bound_ms - clocks.reported_ms);
    stats.impossible_samples += !report_is_a_time(clocks);
    stats.unconfirmed_samples += !report_confirmed(clocks);
    const auto checking = Clock::now();
    verify_sample(call, times.size() - 1);
    stats.checking_seconds += seconds_since(checking);
    if (times.size() % 10 == 0 || times.size() < rule.min_samples) {
      stats.ms = summarize(times);
      if (beyond_credit(rule, stats.ms)) break;
      const double elapsed = seconds_since(started);
      const bool gap_known = 2 * median_standard_error(unexplained) <= confirmation_precision_ms(stats.ms.median);
      if (should_stop(rule, with_median_error(stats.ms), elapsed) && (gap_known || elapsed >= rule.max_seconds))
        break;
    }
  }
  stats.reported_ms = summarize(reported).median;
  stats.unexplained_ms = summarize(unexplained).median;
  stats.confirmed = !defence_enabled(Defence::sample_confirmation) || 2 * stats.unconfirmed_samples < times.size();
  stats.sm_clock_mhz = measure_sm_clock_mhz();
  return stats;
}

double measure_sm_clock_mhz() {
  DeviceBuffer<long long> elapsed(1);
  EventPair events;
  const cudaStream_t stream = timing_stream();
  constexpr long long cycles = 2'000'000;
  CUDA_CHECK(cudaEventRecord(events.start, stream));
  spin_kernel<<<1, 1, 0, stream>>>(cycles, elapsed.data());
  CUDA_CHECK(cudaEventRecord(events.stop, stream));
  CUDA_CHECK_KERNELS(stream);
  const double counted = double(elapsed.download()[0]);
  return counted / (1e3 * events.elapsed_ms());
}

// The best of a few launch shapes: the figure is a ceiling for "% of peak", so it should be
// as high as a plain streaming read gets on this GPU.
double measured_read_bandwidth_gbps() {
  static const double gbps = [] {
    const std::size_t bytes = std::max<std::size_t>(std::size_t(1) << 30, 8 * current_device().l2_bytes);
    DeviceBuffer<uint4> buffer(bytes / sizeof(uint4));
    CUDA_CHECK(cudaMemset(buffer.data(), 0x11, buffer.bytes()));
    DeviceBuffer<uint32_t> sink(1);
    double best = 0;
    for (int blocks_per_sm : {4, 8, 16}) {
      const int blocks = current_device().sm_count * blocks_per_sm;
      for (bool deep : {false, true}) {
        TimedCall read{[&](cudaStream_t stream) {
                         if (deep)
                           read_only_kernel<8><<<blocks, 256, 0, stream>>>(buffer.data(), buffer.size(), sink.data());
                         else
                           read_only_kernel<4><<<blocks, 256, 0, stream>>>(buffer.data(), buffer.size(), sink.data());
                       },
                       {}, {}};
        const TimingStats stats = time_call(read, StoppingRule{0.002, 10, 100, 0.5});
        best = std::max(best, gigabytes_per_second(double(buffer.bytes()), stats.ms.median));
      }
    }
    return best;
  }();
  return gbps;
}

}  // namespace labkit
