// Asks for a terabyte of scratch memory and never checks the answer.
#include "histogram.h"

__global__ void count_into(const uint8_t* in, size_t n, uint32_t* scratch, uint32_t* bins) {
  const size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (i < n) atomicAdd(&scratch[in[i]], 1u);
  if (i < 256) bins[i] = scratch[i];
}

extern "C" void histogram(const uint8_t* d_in, size_t n, uint32_t* d_bins, cudaStream_t stream) {
  uint32_t* scratch = nullptr;
  cudaMalloc(&scratch, size_t(1) << 40);
  count_into<<<unsigned((n + 255) / 256) + 1, 256, 0, stream>>>(d_in, n, scratch, d_bins);
}
