// Writes far outside its buffer from the GPU once the input is large: the CUDA context is
// lost, every later call would fail, and the grader must rerun the remaining cases alone.
#include "histogram.h"

__global__ void count_beyond(const uint8_t* in, size_t n, uint32_t* bins) {
  const size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (i < n) atomicAdd(&bins[in[i] + (n > 1000 ? (size_t(1) << 40) : 0)], 1u);
}

extern "C" void histogram(const uint8_t* d_in, size_t n, uint32_t* d_bins, cudaStream_t stream) {
  cudaMemsetAsync(d_bins, 0, 256 * sizeof(uint32_t), stream);
  if (n > 0) count_beyond<<<unsigned((n + 255) / 256), 256, 0, stream>>>(d_in, n, d_bins);
}
