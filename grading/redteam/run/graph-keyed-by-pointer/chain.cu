// Red team, lab 11 part 2: a kept graph keyed by d_in's address alone. Replays read d_in afresh,
// so new contents in the same buffers are right; but a call on the same buffers with another n
// or number of steps replays the graph built for the first ones.
#include "pipeline.h"

namespace {

constexpr int threads_per_block = 256;

__global__ void step_kernel(const uint32_t* previous, uint32_t* next, size_t n, int step) {
  const size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (i < n) next[i] = chain_element(previous, i, n, step);
}

}  // namespace

extern "C" void mix_chain(const uint32_t* d_in, uint32_t* d_out, uint32_t* d_work, size_t n, int steps,
                          cudaStream_t stream) {
  if (n == 0) return;
  if (steps == 0) {
    cudaMemcpyAsync(d_out, d_in, n * sizeof(uint32_t), cudaMemcpyDeviceToDevice, stream);
    return;
  }
  static const uint32_t* built_for = nullptr;
  static cudaStream_t capture = nullptr;
  static cudaGraphExec_t exec = nullptr;
  if (!capture) cudaStreamCreateWithFlags(&capture, cudaStreamNonBlocking);
  if (!exec || built_for != d_in) {
    if (exec) cudaGraphExecDestroy(exec);
    cudaGraph_t graph = nullptr;
    cudaStreamBeginCapture(capture, cudaStreamCaptureModeThreadLocal);
    const unsigned blocks = unsigned((n + threads_per_block - 1) / threads_per_block);
    const uint32_t* previous = d_in;
    for (int step = 0; step < steps; ++step) {
      uint32_t* next = (steps - 1 - step) % 2 == 0 ? d_out : d_work;
      step_kernel<<<blocks, threads_per_block, 0, capture>>>(previous, next, n, step);
      previous = next;
    }
    cudaStreamEndCapture(capture, &graph);
    cudaGraphInstantiate(&exec, graph, 0);
    cudaGraphDestroy(graph);
    built_for = d_in;
  }
  cudaGraphLaunch(exec, stream);
}
