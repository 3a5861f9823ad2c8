// Lab 01 benchmark: the reference solution beside cub::DeviceHistogram::HistogramEven (the
// library anchor), the chapter's two kernels and a read-only kernel (the ceiling for any
// kernel that reads every byte, timed the same way), with GB/s and % of the device's measured
// read bandwidth (taken at 1 GiB), at the sizes and inputs of datasets/01-histogram.yaml's
// performance and benchmark cases. Not a test: it prints numbers for people to read.
#include "cub_histogram.cuh"
#include "histogram.h"

#include <labkit/bench.h>
#include <labkit/buffer.h>
#include <labkit/device.h>
#include <labkit/generators.h>
#include <labkit/read_only.cuh>
#include <labkit/timing.h>

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace {

using labkit::DeviceBuffer;
constexpr int bin_count = 256;

// The chapter's global-atomics kernel with its index corrected.
__global__ void chapter_global_atomics_kernel(const uint8_t* in, size_t n, uint32_t* bins) {
  for (size_t i = threadIdx.x + blockIdx.x * size_t(blockDim.x); i < n; i += size_t(blockDim.x) * gridDim.x)
    atomicAdd(&bins[in[i]], 1u);
}

// The chapter's shared-memory kernel: one block histogram, one byte per thread per step.
__global__ void chapter_shared_kernel(const uint8_t* in, size_t n, uint32_t* bins) {
  __shared__ uint32_t block_bins[bin_count];
  block_bins[threadIdx.x] = 0;
  __syncthreads();
  for (size_t i = threadIdx.x + blockIdx.x * size_t(blockDim.x); i < n; i += size_t(blockDim.x) * gridDim.x)
    atomicAdd(&block_bins[in[i]], 1u);
  __syncthreads();
  atomicAdd(&bins[threadIdx.x], block_bins[threadIdx.x]);
}

struct Variant {
  const char* name;
  std::function<void(const uint8_t*, size_t, uint32_t*, cudaStream_t)> run;
  bool counts = true;  // false: a yardstick whose bins are not a histogram
};

std::vector<Variant> variants(CubHistogram& cub) {
  const int chapter_blocks = 2 * labkit::current_device().sm_count;
  const int read_blocks = labkit::current_device().sm_count;
  return {
      {"reference solution", histogram},
      {"cub::HistogramEven", std::ref(cub)},
      {"chapter: shared memory",
       [chapter_blocks](const uint8_t* in, size_t n, uint32_t* bins, cudaStream_t stream) {
         cudaMemsetAsync(bins, 0, bin_count * sizeof(uint32_t), stream);
         chapter_shared_kernel<<<chapter_blocks, bin_count, 0, stream>>>(in, n, bins);
       }},
      {"chapter: global atomics",
       [chapter_blocks](const uint8_t* in, size_t n, uint32_t* bins, cudaStream_t stream) {
         cudaMemsetAsync(bins, 0, bin_count * sizeof(uint32_t), stream);
         chapter_global_atomics_kernel<<<chapter_blocks, bin_count, 0, stream>>>(in, n, bins);
       }},
      // The floor is the reference's own launch shape and loads, counting nothing. Other
      // shapes tried at 100 MiB (256 threads x 4-16 blocks per SM, 512 x 4, 1024 x 2;
      // 4 or 8 loads in flight) read at 79-82% of peak too. From run to run each moves by a
      // few percent, so compare rows of one run.
      {"read-only kernel (ceiling)",
       [read_blocks](const uint8_t* in, size_t n, uint32_t* sink, cudaStream_t stream) {
         labkit::read_only(in, n, sink, read_blocks, stream);
       },
       false},
  };
}

void bench_case(const labkit::Case& c, double peak_gbps) {
  const size_t n = c.n;
  const auto host = labkit::generate<uint8_t>(n, c.input);
  std::vector<uint32_t> expected(bin_count, 0);
  for (uint8_t b : host) ++expected[b];
  DeviceBuffer<uint8_t> input(host);
  DeviceBuffer<uint32_t> bins(bin_count);
  CubHistogram cub(n);

  for (const Variant& v : variants(cub)) {
    const labkit::TimingStats t = labkit::time_call(
        {[&](cudaStream_t stream) { v.run(input.data(), n, bins.data(), stream); },
         [&](int) { bins.poison(); }});
    const bool right = !v.counts || bins.download() == expected;
    const double gbps = labkit::gigabytes_per_second(double(n), t.ms.median);
    std::printf("%-16s %-26s %10.4f ms %9.1f GB/s %6.1f%% of peak  (%zu samples, +-%.2f%%)%s\n", c.name.c_str(),
                v.name, t.ms.median, gbps, 100 * gbps / peak_gbps, t.ms.count,
                100 * t.ms.relative_error, right ? "" : "  WRONG OUTPUT");
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<labkit::Case> cases = labkit::benchmark_cases(argc, argv);
  const double peak = labkit::start_benchmark();
  for (const labkit::Case& c : cases) bench_case(c, peak);
  return 0;
}
