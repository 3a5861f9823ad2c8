// Lab 11, part 2 starter: the chain as most first CUDA programs write it. One kernel launch per
// step, on the caller's stream, in a host loop; the stream's order makes each step wait for
// the one before it.
//
// It is correct, and slow where the steps are small: each launch costs the host a few
// microseconds in the driver, longer than the GPU needs for a step over tens of thousands of
// elements, so the GPU waits for the host between steps. The README's part 2 explains how to
// pay for the launches once and replay them.
#include "pipeline.h"

namespace {

constexpr int threads_per_block = 256;

__global__ void chain_step_kernel(const uint32_t* previous, uint32_t* next, size_t n, int step) {
  const size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (i < n) next[i] = chain_element(previous, i, n, step);
}

}  // namespace

extern "C" void mix_chain(const uint32_t* d_in, uint32_t* d_out, uint32_t* d_work, size_t n, int steps,
                          cudaStream_t stream) {
  if (n == 0) return;  // a grid of zero blocks is a launch error
  if (steps == 0) {
    cudaMemcpyAsync(d_out, d_in, n * sizeof(uint32_t), cudaMemcpyDeviceToDevice, stream);
    return;
  }
  // A step cannot write the array it reads (another block may still need an element it would
  // overwrite), so the steps alternate between d_out and d_work, starting where the count's
  // parity makes the last step land in d_out.
  const unsigned blocks = unsigned((n + threads_per_block - 1) / threads_per_block);
  const uint32_t* previous = d_in;
  for (int step = 0; step < steps; ++step) {
    uint32_t* next = (steps - 1 - step) % 2 == 0 ? d_out : d_work;
    chain_step_kernel<<<blocks, threads_per_block, 0, stream>>>(previous, next, n, step);
    previous = next;
  }
}
