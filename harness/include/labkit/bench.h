// What every lab benchmark (labs/NN-name/bench_*.cu) shares.
#pragma once

#include "labkit/dataset.h"
#include "labkit/device.h"
#include "labkit/exit_status.h"
#include "labkit/timing.h"

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

// The lab's dataset as the catalog names it (labs/meson.build defines it for each benchmark),
// the file the grader hands the lab's runner as --dataset.
#ifndef LABKIT_BENCH_DATASET
#error "a benchmark is built by labs/meson.build, which defines LABKIT_BENCH_DATASET"
#endif

namespace labkit {

// The cases the benchmark times (labkit::benchmark_cases: the graded performance cases and
// the dataset's benchmark-only ones, kind "performance" or "benchmark"), from the lab's
// dataset or from `--dataset PATH`, as the runner takes it: other sizes without a rebuild.
// Read before the GPU is looked for, so that a bad dataset shows on any machine; a bad
// argument or dataset says why and exits with the usage status.
inline std::vector<Case> benchmark_cases(int argc, char** argv) {
  std::string path = LABKIT_BENCH_DATASET;
  for (int i = 1; i < argc; ++i) {
    const std::string argument = argv[i];
    if (argument == "--dataset" && i + 1 < argc) {
      path = argv[++i];
    } else {
      std::fprintf(stderr, "usage: %s [--dataset PATH] (default: %s)\n", argv[0], LABKIT_BENCH_DATASET);
      std::exit(protocol::exit_status::usage);
    }
  }
  try {
    return benchmark_cases(load_dataset(path));
  } catch (const std::exception& error) {
    std::fprintf(stderr, "%s\n", error.what());
    std::exit(protocol::exit_status::usage);
  }
}

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
