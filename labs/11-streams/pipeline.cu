// Lab 11 starter: the job as most first CUDA programs write it. Everything goes on one
// stream, one phase after another: copy both images in, merge them, copy the result out.
//
// It is correct, and slow: while the copy engines move data the SMs wait, and while the SMs
// compute both copy engines wait. The README explains how to keep all three busy at once.
#include "pipeline.h"

namespace {

constexpr int threads_per_block = 256;

__global__ void merge_kernel(const uint32_t* a, const uint32_t* b, uint32_t* out, size_t n, int rounds) {
  const size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = merge_element(a[i], b[i], rounds);
}

}  // namespace

extern "C" void merge_pipelined(const uint32_t* h_a, const uint32_t* h_b, uint32_t* h_out, size_t n, int rounds,
                                uint32_t* d_a, uint32_t* d_b, uint32_t* d_out, cudaStream_t stream) {
  if (n == 0) return;  // a grid of zero blocks is a launch error
  const size_t bytes = n * sizeof(uint32_t);
  cudaMemcpyAsync(d_a, h_a, bytes, cudaMemcpyHostToDevice, stream);
  cudaMemcpyAsync(d_b, h_b, bytes, cudaMemcpyHostToDevice, stream);
  const unsigned blocks = unsigned((n + threads_per_block - 1) / threads_per_block);
  merge_kernel<<<blocks, threads_per_block, 0, stream>>>(d_a, d_b, d_out, n, rounds);
  cudaMemcpyAsync(h_out, d_out, bytes, cudaMemcpyDeviceToHost, stream);
}
