// A broken lab 01 submission for checking the grader's compute-sanitizer step on a GPU: bins
// indexed in bytes instead of counters, scaled far past the end of the 1 KiB histogram. memcheck
// must report the invalid global atomics at this file's line (see docs/grader-measurements.md).
#include "histogram.h"

namespace {

constexpr int bin_count = 256;
constexpr int threads_per_block = 256;
constexpr size_t page_words = 4096;  // a bug: the bin's index scaled by a page

__global__ void histogram_scattered_kernel(const uint8_t* in, size_t n, uint32_t* bins) {
  const size_t stride = size_t(blockDim.x) * gridDim.x;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += stride)
    atomicAdd(&bins[in[i] * page_words], 1u);
}

}  // namespace

extern "C" void histogram(const uint8_t* d_in, size_t n, uint32_t* d_bins, cudaStream_t stream) {
  cudaMemsetAsync(d_bins, 0, bin_count * sizeof(uint32_t), stream);
  histogram_scattered_kernel<<<264, threads_per_block, 0, stream>>>(d_in, n, d_bins);
}
