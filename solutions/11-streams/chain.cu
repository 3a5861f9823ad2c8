// Lab 11, part 2 reference: the chain's launches captured once into a CUDA graph, and the
// instantiated graph replayed by every later call with the same arguments.
//
// Beyond the starter's loop (one cudaLaunchKernel per step on the caller's stream) it changes
// two things:
//  1. The steps are launched once, into a graph (stream capture on a stream of its own), and
//     the instantiated graph is kept in a static with the arguments it was built for. A call
//     with the same pointers and sizes is one cudaGraphLaunch: the driver submits every node
//     from a plan made at instantiation, without a trip through the runtime per kernel, so the
//     GPU no longer waits for the host between steps. The graph holds the buffers' addresses,
//     not their contents, so each replay reads d_in as it is when the replay runs.
//  2. New arguments are captured again, and the new graph is written into the kept one with
//     cudaGraphExecUpdate where its shape is the same (same number of steps: only the kernels'
//     parameters change), which costs far less than instantiating again; otherwise the old one
//     is destroyed and the new one instantiated.
// Each step's partner offset is computed on the host while capturing and passed to its kernel,
// so the kernel does no 64-bit division: a little less for the GPU to do per step.
// A persistent kernel that runs every step with a barrier across the grid between them is
// another legitimate answer, and may be faster still (the README, part 2); the lesson here is
// the graph.
#include "pipeline.h"

namespace {

constexpr int threads_per_block = 256;

__global__ void chain_step_kernel(const uint32_t* previous, uint32_t* next, size_t n, size_t offset, int step) {
  const size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  size_t partner = i + offset;
  if (partner >= n) partner -= n;
  next[i] = chain_mix(previous[i], previous[partner], step);
}

// What a kept graph was built for: a call with other arguments needs another graph.
struct ChainArguments {
  const uint32_t* d_in = nullptr;
  uint32_t* d_out = nullptr;
  uint32_t* d_work = nullptr;
  size_t n = 0;
  int steps = 0;

  bool operator==(const ChainArguments& other) const {
    return d_in == other.d_in && d_out == other.d_out && d_work == other.d_work && n == other.n &&
           steps == other.steps;
  }
};

// One launch per step on `stream`, alternating between d_out and d_work so that the last step
// lands in d_out (a step cannot write the array it reads).
void enqueue_steps(const ChainArguments& a, cudaStream_t stream) {
  const unsigned blocks = unsigned((a.n + threads_per_block - 1) / threads_per_block);
  const uint32_t* previous = a.d_in;
  for (int step = 0; step < a.steps; ++step) {
    uint32_t* next = (a.steps - 1 - step) % 2 == 0 ? a.d_out : a.d_work;
    chain_step_kernel<<<blocks, threads_per_block, 0, stream>>>(previous, next, a.n, chain_offset(step, a.n), step);
    previous = next;
  }
}

// The kept graph and the stream it is captured on. Capturing on a stream of our own leaves the
// caller's stream alone (whatever it has queued is not part of the graph), and the thread-local
// capture mode lets other threads use CUDA meanwhile.
struct KeptGraph {
  cudaStream_t capture_stream = nullptr;
  cudaGraphExec_t exec = nullptr;
  ChainArguments built_for;

  KeptGraph() { cudaStreamCreateWithFlags(&capture_stream, cudaStreamNonBlocking); }
};

KeptGraph& kept_graph() {
  static KeptGraph instance;  // the contract's calls all run on device 0
  return instance;
}

// Makes `kept.exec` the graph of `a`; false when capture or instantiation failed.
bool rebuild(KeptGraph& kept, const ChainArguments& a) {
  cudaGraph_t graph = nullptr;
  if (cudaStreamBeginCapture(kept.capture_stream, cudaStreamCaptureModeThreadLocal) != cudaSuccess) return false;
  enqueue_steps(a, kept.capture_stream);
  if (cudaStreamEndCapture(kept.capture_stream, &graph) != cudaSuccess) return false;
  bool ready = false;
  if (kept.exec) {
    cudaGraphExecUpdateResultInfo info{};
    ready = cudaGraphExecUpdate(kept.exec, graph, &info) == cudaSuccess;
    if (!ready) {
      cudaGetLastError();  // a refused update is no error of the call's: clear it, instantiate anew
      cudaGraphExecDestroy(kept.exec);
      kept.exec = nullptr;
    }
  }
  if (!ready) ready = cudaGraphInstantiate(&kept.exec, graph, 0) == cudaSuccess;
  cudaGraphDestroy(graph);
  if (!ready) {
    kept.exec = nullptr;
    return false;
  }
  kept.built_for = a;
  return true;
}

}  // namespace

extern "C" void mix_chain(const uint32_t* d_in, uint32_t* d_out, uint32_t* d_work, size_t n, int steps,
                          cudaStream_t stream) {
  if (n == 0) return;
  if (steps == 0) {
    cudaMemcpyAsync(d_out, d_in, n * sizeof(uint32_t), cudaMemcpyDeviceToDevice, stream);
    return;
  }
  KeptGraph& kept = kept_graph();
  const ChainArguments arguments{d_in, d_out, d_work, n, steps};
  if (!kept.exec || !(kept.built_for == arguments)) {
    if (!rebuild(kept, arguments)) {
      cudaGetLastError();                // what failed was the graph, not the chain
      enqueue_steps(arguments, stream);  // so the same launches, one by one
      return;
    }
  }
  cudaGraphLaunch(kept.exec, stream);
}
