// The chapter's shared-memory histogram, done right and handed in honestly: each block counts
// its bytes into 256 bins in shared memory, then adds them to the global bins, one atomicAdd
// per bin; 2 x SMs blocks of 256 threads, one byte per thread per step (the kit's calibration
// copy in grading/policy/chapter/). The honest twin of the entries that run this kernel with a
// trick beside it: what it earns is what they may earn with every defence on.
#include "histogram.h"

namespace {

constexpr int bin_count = 256;
constexpr int threads_per_block = 256;
static_assert(threads_per_block == bin_count,
              "one thread per bin: each thread zeroes and merges exactly one shared bin");

__global__ void histogram_shared_privatized_kernel(const uint8_t* in, size_t n, uint32_t* bins) {
  __shared__ uint32_t block_bins[bin_count];
  block_bins[threadIdx.x] = 0;
  __syncthreads();

  size_t i = threadIdx.x + blockIdx.x * size_t(blockDim.x);
  const size_t stride = size_t(blockDim.x) * gridDim.x;
  while (i < n) {
    atomicAdd(&block_bins[in[i]], 1u);
    i += stride;
  }
  __syncthreads();

  atomicAdd(&bins[threadIdx.x], block_bins[threadIdx.x]);
}

}  // namespace

extern "C" void histogram(const uint8_t* d_in, size_t n, uint32_t* d_bins, cudaStream_t stream) {
  cudaMemsetAsync(d_bins, 0, bin_count * sizeof(uint32_t), stream);

  int device = 0;
  int sm_count = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, device);
  histogram_shared_privatized_kernel<<<2 * sm_count, threads_per_block, 0, stream>>>(d_in, n, d_bins);
}
