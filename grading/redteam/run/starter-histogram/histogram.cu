// Lab 01 starter: the chapter's first GPU histogram. Every byte is counted with one
// atomicAdd on the histogram in global memory, by 2 x (number of SMs) blocks of 256
// threads walking the input in a grid-stride loop.
//
// It is wrong (look at how each thread finds its first byte) and, once right, slow:
// the README explains why, and what to do about it.
#include "histogram.h"

namespace {

constexpr int bin_count = 256;
constexpr int threads_per_block = 256;

__global__ void histogram_global_atomics_kernel(const uint8_t* in, size_t n, uint32_t* bins) {
  size_t i = threadIdx.x + blockIdx.x + blockDim.x;
  const size_t stride = size_t(blockDim.x) * gridDim.x;
  while (i < n) {
    atomicAdd(&bins[in[i]], 1u);
    i += stride;
  }
}

}  // namespace

extern "C" void histogram(const uint8_t* d_in, size_t n, uint32_t* d_bins, cudaStream_t stream) {
  cudaMemsetAsync(d_bins, 0, bin_count * sizeof(uint32_t), stream);

  int device = 0;
  int sm_count = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, device);
  // Two blocks per SM, as the chapter found best for this kernel.
  histogram_global_atomics_kernel<<<2 * sm_count, threads_per_block, 0, stream>>>(d_in, n, d_bins);
}
