// What every lab benchmark (labs/NN-name/bench_*.cu) shares.
#pragma once

#include "labkit/device.h"
#include "labkit/timing.h"

#include <cstdio>
#include <cstdlib>

namespace labkit {

// Without a GPU, says so and exits 77 (skipped). Otherwise prints the device, its measured
// read bandwidth and SM clock (and `note`), and returns the bandwidth in GB/s: the "peak"
// that each row's "% of peak" is relative to.
inline double start_benchmark(const char* note = "") {
  if (const auto reason = why_no_gpu()) {
    std::printf("SKIPPED: %s\n", reason->c_str());
    std::exit(skip_exit_code);
  }
  const double peak = measured_read_bandwidth_gbps();
  std::printf("%s: measured read bandwidth %.0f GB/s, SM clock %.0f MHz%s\n", current_device().name.c_str(), peak,
              measure_sm_clock_mhz(), note);
  return peak;
}

}  // namespace labkit
