// The starter of part 2 as the kit keeps it: one kernel launch per step of the chain on one
// stream. It is the yardstick of "launch cost paid once": the checks (test_pipeline.cu) time a
// call against it and compute the timed calls' expected output with it, and the benchmark
// (bench_pipeline.cu) prints it beside the graphs.
#pragma once

#include "pipeline.h"

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace chapter_chain {

constexpr int threads_per_block = 256;

__global__ void step_kernel(const uint32_t* previous, uint32_t* next, size_t n, int step) {
  const size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (i < n) next[i] = chain_element(previous, i, n, step);
}

// Where step `step` of `steps` writes: the steps alternate between d_out and d_work so that the
// last one lands in d_out.
__host__ __device__ inline uint32_t* step_output(int step, int steps, uint32_t* d_out, uint32_t* d_work) {
  return (steps - 1 - step) % 2 == 0 ? d_out : d_work;
}

// Queues the chain on `stream`, one launch per step; returns the launch's error, if any.
inline cudaError_t mix_chain_per_step(const uint32_t* d_in, uint32_t* d_out, uint32_t* d_work, size_t n, int steps,
                                      cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  if (steps == 0) return cudaMemcpyAsync(d_out, d_in, n * sizeof(uint32_t), cudaMemcpyDeviceToDevice, stream);
  const unsigned blocks = unsigned((n + threads_per_block - 1) / threads_per_block);
  const uint32_t* previous = d_in;
  for (int step = 0; step < steps; ++step) {
    uint32_t* next = step_output(step, steps, d_out, d_work);
    step_kernel<<<blocks, threads_per_block, 0, stream>>>(previous, next, n, step);
    previous = next;
  }
  return cudaGetLastError();
}

}  // namespace chapter_chain
