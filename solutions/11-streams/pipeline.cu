// Lab 11 reference: the job cut into chunks, each chunk's copy in, kernel and copy out queued
// on one of four non-blocking streams in turn. Within a stream the three steps stay in order;
// across streams they overlap, so while chunk k is being merged, chunk k+1 is coming in on the
// host-to-device copy engine and chunk k-1 is going out on the device-to-host engine. The call
// then takes about as long as the slowest of the three phases alone, plus one chunk of each
// of the others to fill and drain the pipeline.
#include "pipeline.h"

#include <algorithm>

namespace {

constexpr int threads_per_block = 256;
// Three streams keep the three phases busy; a fourth lets a chunk's kernel start while its
// neighbours' copies are still queued, absorbing jitter in any one phase.
constexpr int stream_count = 4;
// Filling and draining costs about one chunk of each phase, which argues for many chunks;
// but on 2 x H200 at 64Mi pixels 16 chunks beat 96 where copies dominate (1.14x and 1.10x the
// slowest phase alone against 1.19x and 1.19x: each chunk's copies and launch cost something)
// and lost only where the kernel dominates (1.05x against 1.01x).
constexpr size_t target_chunks = 16;
constexpr size_t min_chunk_elements = size_t(1) << 18;
constexpr size_t chunk_alignment = 1024;  // elements: chunks start on 4 KiB boundaries

__global__ void merge_chunk_kernel(const uint32_t* a, const uint32_t* b, uint32_t* out, size_t n, int rounds) {
  const size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = merge_element(a[i], b[i], rounds);
}

// Streams and events are made once and kept: creating them costs tens of microseconds, and
// streams made in every call would also be torn down while their work is still queued.
struct Pipeline {
  cudaStream_t streams[stream_count];
  cudaEvent_t forked;                   // what the caller queued on its stream before the call
  cudaEvent_t joined[stream_count];     // each stream's last chunk

  Pipeline() {
    for (int s = 0; s < stream_count; ++s) {
      // Non-blocking: no implicit wait on the legacy default stream, which would serialise
      // every chunk against anything else in the process.
      cudaStreamCreateWithFlags(&streams[s], cudaStreamNonBlocking);
      cudaEventCreateWithFlags(&joined[s], cudaEventDisableTiming);
    }
    cudaEventCreateWithFlags(&forked, cudaEventDisableTiming);
  }
};

Pipeline& pipeline() {
  static Pipeline instance;  // the contract's calls all run on device 0
  return instance;
}

size_t chunk_elements(size_t n) {
  const size_t even_split = (n + target_chunks - 1) / target_chunks;
  const size_t aligned = (even_split + chunk_alignment - 1) / chunk_alignment * chunk_alignment;
  return std::max(aligned, min_chunk_elements);
}

// One chunk, start to finish, on one stream: the stream keeps its three steps in order.
void enqueue_chunk(const uint32_t* h_a, const uint32_t* h_b, uint32_t* h_out, size_t count, int rounds,
                   uint32_t* d_a, uint32_t* d_b, uint32_t* d_out, cudaStream_t stream) {
  const size_t bytes = count * sizeof(uint32_t);
  cudaMemcpyAsync(d_a, h_a, bytes, cudaMemcpyHostToDevice, stream);
  cudaMemcpyAsync(d_b, h_b, bytes, cudaMemcpyHostToDevice, stream);
  const unsigned blocks = unsigned((count + threads_per_block - 1) / threads_per_block);
  merge_chunk_kernel<<<blocks, threads_per_block, 0, stream>>>(d_a, d_b, d_out, count, rounds);
  cudaMemcpyAsync(h_out, d_out, bytes, cudaMemcpyDeviceToHost, stream);
}

}  // namespace

extern "C" void merge_pipelined(const uint32_t* h_a, const uint32_t* h_b, uint32_t* h_out, size_t n, int rounds,
                                uint32_t* d_a, uint32_t* d_b, uint32_t* d_out, cudaStream_t stream) {
  if (n == 0) return;
  Pipeline& p = pipeline();
  // Fork: no chunk starts before what the caller queued on `stream`.
  cudaEventRecord(p.forked, stream);
  for (cudaStream_t s : p.streams) cudaStreamWaitEvent(s, p.forked, 0);

  // Depth first: chunk k goes whole onto stream k % 4. Each copy engine takes its copies in
  // the order they were queued, so chunks flow through in order and none waits for a later one.
  const size_t chunk = chunk_elements(n);
  int chunk_index = 0;
  for (size_t begin = 0; begin < n; begin += chunk, ++chunk_index) {
    const size_t count = std::min(chunk, n - begin);  // the last chunk may be short
    enqueue_chunk(h_a + begin, h_b + begin, h_out + begin, count, rounds, d_a + begin, d_b + begin, d_out + begin,
                  p.streams[chunk_index % stream_count]);
  }

  // Join: `stream` now waits for every chunk, so a caller that synchronises only it is safe.
  for (int s = 0; s < stream_count; ++s) {
    cudaEventRecord(p.joined[s], p.streams[s]);
    cudaStreamWaitEvent(stream, p.joined[s], 0);
  }
}
