// GPU timing, following nvbench and GPU MODE's evaluator: CUDA events around each call,
// warm-up, an L2 flush and a persisting-L2 reset before every sample, the whole device
// synchronised so work hidden on other streams still counts, and samples until the mean
// is known to 0.5%.
#pragma once

#include "labkit/stats.h"

#include <cuda_runtime.h>

#include <functional>

namespace labkit {

struct TimingStats {
  SampleSummary ms;              // per-call milliseconds
  double sm_clock_mhz = 0;       // measured while timing, to spot a throttled GPU
  bool off_stream_work = false;  // wall clock far above the event time in most samples: work on another stream
};

struct TimedCall {
  std::function<void(cudaStream_t)> launch;  // the call being timed
  std::function<void(int sample)> prepare;   // untimed: poison outputs, pick an input
};

TimingStats time_call(const TimedCall& call, const StoppingRule& rule = {});

inline double gigabytes_per_second(double bytes, double ms) { return bytes / (ms * 1e-3) / 1e9; }

// Device memory read bandwidth in GB/s, measured once per process by a read-only kernel
// over a buffer far larger than L2. The "% of peak" figures are relative to this.
double measured_read_bandwidth_gbps();

// The SM clock in MHz: a kernel counts clock64() cycles over an event-timed interval.
double measure_sm_clock_mhz();

}  // namespace labkit
