// Lab 01 benchmark: the reference solution beside cub::DeviceHistogram::HistogramEven (the
// library anchor) and the chapter's two kernels, with GB/s and % of the device's measured
// read bandwidth. Not a test: it prints numbers for people to read.
#include "histogram.h"

#include <labkit/bench.h>
#include <labkit/buffer.h>
#include <labkit/device.h>
#include <labkit/generators.h>
#include <labkit/timing.h>

#include <cub/device/device_histogram.cuh>

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
};

std::vector<Variant> variants(DeviceBuffer<uint8_t>& cub_scratch) {
  const int chapter_blocks = 2 * labkit::current_device().sm_count;
  return {
      {"reference solution", histogram},
      {"cub::HistogramEven",
       [&cub_scratch](const uint8_t* in, size_t n, uint32_t* bins, cudaStream_t stream) {
         size_t bytes = cub_scratch.size();
         cub::DeviceHistogram::HistogramEven(cub_scratch.data(), bytes, in, reinterpret_cast<int*>(bins),
                                             bin_count + 1, 0, bin_count, int64_t(n), stream);
       }},
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
  };
}

size_t cub_scratch_bytes(size_t n) {
  size_t bytes = 0;
  cub::DeviceHistogram::HistogramEven(nullptr, bytes, static_cast<const uint8_t*>(nullptr), static_cast<int*>(nullptr),
                                      bin_count + 1, 0, bin_count, int64_t(n));
  return bytes;
}

void bench_case(const char* label, size_t n, labkit::Distribution distribution, double peak_gbps) {
  const auto host = labkit::generate<uint8_t>(n, {distribution, 42, 0, 255});
  std::vector<uint32_t> expected(bin_count, 0);
  for (uint8_t b : host) ++expected[b];
  DeviceBuffer<uint8_t> input(host);
  DeviceBuffer<uint32_t> bins(bin_count);
  DeviceBuffer<uint8_t> cub_scratch(cub_scratch_bytes(n));

  for (const Variant& v : variants(cub_scratch)) {
    const labkit::TimingStats t = labkit::time_call(
        {[&](cudaStream_t stream) { v.run(input.data(), n, bins.data(), stream); },
         [&](int) { bins.poison(); }});
    const bool right = bins.download() == expected;
    const double gbps = labkit::gigabytes_per_second(double(n), t.ms.median);
    std::printf("%-16s %-24s %10.4f ms %9.1f GB/s %6.1f%% of peak  (%zu samples, +-%.2f%%)%s\n", label,
                v.name, t.ms.median, gbps, 100 * gbps / peak_gbps, t.ms.count,
                100 * t.ms.relative_error, right ? "" : "  WRONG OUTPUT");
  }
}

}  // namespace

int main() {
  const double peak = labkit::start_benchmark();
  bench_case("uniform 100MiB", size_t(100) << 20, labkit::Distribution::uniform, peak);
  bench_case("all-same 100MiB", size_t(100) << 20, labkit::Distribution::all_same, peak);
  bench_case("text-like 100MiB", size_t(100) << 20, labkit::Distribution::skewed, peak);
  bench_case("uniform 1GiB", size_t(1) << 30, labkit::Distribution::uniform, peak);
  return 0;
}
