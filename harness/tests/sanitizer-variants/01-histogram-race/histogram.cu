// A broken lab 01 submission for checking the grader's compute-sanitizer step on a GPU: the
// chapter's privatized histogram with both of its __syncthreads removed. racecheck must name
// the shared-memory hazards at this file's lines (see docs/grader-measurements.md).
#include "histogram.h"

namespace {

constexpr int bin_count = 256;
constexpr int threads_per_block = 256;

__global__ void histogram_shared_kernel(const uint8_t* in, size_t n, uint32_t* bins) {
  __shared__ uint32_t block_bins[bin_count];
  for (int b = threadIdx.x; b < bin_count; b += blockDim.x) block_bins[b] = 0;
  // Missing __syncthreads(): a fast warp may count into a bin another warp has not zeroed yet.
  const size_t stride = size_t(blockDim.x) * gridDim.x;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += stride)
    atomicAdd(&block_bins[in[i]], 1u);
  // Missing __syncthreads(): the first warp writes the block's counts out while other warps
  // still zero and add to them (a read of another thread's plain store, with no barrier between).
  if (threadIdx.x < 32)
    for (int b = threadIdx.x; b < bin_count; b += 32)
      if (block_bins[b] != 0) atomicAdd(&bins[b], block_bins[b]);
}

}  // namespace

extern "C" void histogram(const uint8_t* d_in, size_t n, uint32_t* d_bins, cudaStream_t stream) {
  cudaMemsetAsync(d_bins, 0, bin_count * sizeof(uint32_t), stream);
  int device = 0, sm_count = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, device);
  histogram_shared_kernel<<<2 * sm_count, threads_per_block, 0, stream>>>(d_in, n, d_bins);
}
