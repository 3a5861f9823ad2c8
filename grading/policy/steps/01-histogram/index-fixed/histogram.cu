// Policy step for lab 01: the planted bug fixed, and nothing else.
//
// The starter is the chapter's first GPU histogram, whose first index is
// `threadIdx.x + blockIdx.x + blockDim.x` (a `+` where `*` belongs): blocks overlap and most of
// the input is never started on. Here that index is `threadIdx.x + blockIdx.x * blockDim.x`
// (in size_t), and everything else is the starter's: every byte one atomicAdd on the 256
// counters in global memory, 2 x SMs blocks of 256 threads in a grid-stride loop.
//
// Why it is a tier: it is the chapter's first kernel made right, before the chapter's lesson
// (privatizing the histogram in shared memory). All blocks queue on the same 256 global
// counters, worst of all on input made of one byte value, so it must earn more than the
// starter (its answers are right) and less than the chapter's shared-memory kernel.
// Follows seed 000_d705fd0c38801cb9.txt, the first GPU histo_kernel with its index corrected;
// lab README, "Atomics, and the lost update" and "Contention".
#include "histogram.h"

namespace {

constexpr int bin_count = 256;
constexpr int threads_per_block = 256;

__global__ void histogram_global_atomics_kernel(const uint8_t* in, size_t n, uint32_t* bins) {
  size_t i = threadIdx.x + blockIdx.x * size_t(blockDim.x);
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
