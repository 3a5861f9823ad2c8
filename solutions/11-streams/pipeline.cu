// Lab 11 reference: a pipeline with one stream per stage, and chunks that are small at both
// ends of the job and large in the middle.
//
// Beyond the chapter's loop (chunk k whole on stream k % 4, all chunks the same size) it
// changes two things:
//  1. One stream per stage, chained by events: every copy in goes on one stream, the kernels
//     alternate between two, every copy out goes on one. In the chapter's loop chunk k + 4's
//     copy in waits in its stream behind chunk k's copy out, so the copies in can run at most
//     four chunks ahead of the copies out; here they never wait for anything but the link.
//     Two kernel streams let a chunk's kernel start in the SMs its predecessor's last blocks
//     leave free.
//  2. Chunk sizes that ramp up from 1 MiB per image (doubling), stay at up to 24 MiB in the
//     middle, and ramp down to 1 MiB again at the end, shrinking by a fifth per chunk. The
//     pipeline costs, beyond its slowest stage, the fill (the first copy in, before any
//     kernel can start), the drain (the kernels and copies out still to do after the last
//     copy in) and a few microseconds per chunk. Small chunks at the ends keep the fill and
//     drain short, large ones in the middle keep the chunk count (25 at 64Mi pixels) low.
//     The end ramp is gentle because a kernel nearly as slow as the copies (the balanced
//     case) falls behind when each chunk is half its predecessor, and must then work off
//     the backlog after the last copy in: halving, it ran further above the bound.
// It comes within a few percent of the slowest stage alone, ahead of the chapter's loop at
// every chunk count tried (docs/design/11-streams.md). Where the copies limit, most of what is left
// is the link: copies in slow down while copies out share it.
#include "pipeline.h"

#include <algorithm>

namespace {

constexpr int threads_per_block = 256;
constexpr int kernel_stream_count = 2;
// Chunk sizes in elements (4 bytes each).
constexpr size_t smallest_chunk = size_t(1) << 18;  // 1 MiB per image
constexpr size_t largest_chunk = size_t(6) << 20;   // 24 MiB per image
constexpr size_t chunk_alignment = 1024;            // elements: chunks start on 4 KiB boundaries
constexpr size_t max_elements = size_t(1) << 27;    // the contract's largest n

size_t round_up(size_t value, size_t multiple) { return (value + multiple - 1) / multiple * multiple; }
// The ramp at the start doubles; the one at the end grows by a quarter per chunk (read
// backwards), gently enough that each chunk's kernel keeps pace with the next chunk's copy
// in even when the kernel is nearly as slow as the copies.
constexpr size_t start_ramp_next(size_t size) { return 2 * size; }
constexpr size_t end_ramp_next(size_t size) {
  return (size + size / 4 + chunk_alignment - 1) / chunk_alignment * chunk_alignment;
}

constexpr int ramp_length(size_t size, bool at_start) {
  return size >= largest_chunk ? 0 : 1 + ramp_length(at_start ? start_ramp_next(size) : end_ramp_next(size), at_start);
}
constexpr int max_start_ramp = ramp_length(smallest_chunk, true);
constexpr int max_end_ramp = ramp_length(smallest_chunk, false);
// Both ramps, and at most max_elements / largest_chunk chunks between (one more when rounding
// leaves a short one).
constexpr int max_chunks = max_start_ramp + max_end_ramp + int(max_elements / largest_chunk) + 1;

__global__ void merge_chunk_kernel(const uint32_t* a, const uint32_t* b, uint32_t* out, size_t n, int rounds) {
  const size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = merge_element(a[i], b[i], rounds);
}

// Where each chunk starts: begins[0] = 0, begins[count] = n.
struct ChunkPlan {
  int count = 0;
  size_t begins[max_chunks + 1];
};

// Ramps at both ends while they fit (the start's in the first half of n), largest chunks
// between. An n too small for any ramp runs as one chunk: too little to overlap to be worth it.
ChunkPlan plan_chunks(size_t n) {
  size_t start_ramp[max_start_ramp], end_ramp[max_end_ramp];
  int start_count = 0, end_count = 0;
  size_t ramped = 0;
  for (size_t size = smallest_chunk; size < largest_chunk && ramped + size <= n / 2; size = start_ramp_next(size)) {
    start_ramp[start_count++] = size;
    ramped += size;
  }
  for (size_t size = smallest_chunk; size < largest_chunk && ramped + size <= n; size = end_ramp_next(size)) {
    end_ramp[end_count++] = size;
    ramped += size;
  }

  ChunkPlan plan;
  size_t begin = 0;
  auto add = [&](size_t size) {
    plan.begins[plan.count++] = begin;
    begin += size;
  };
  for (int r = 0; r < start_count; ++r) add(start_ramp[r]);
  const size_t middle = n - ramped;
  const size_t middle_end = begin + middle;
  const size_t middle_chunks = std::max<size_t>(1, (middle + largest_chunk - 1) / largest_chunk);
  const size_t middle_chunk = round_up((middle + middle_chunks - 1) / middle_chunks, chunk_alignment);
  while (begin < middle_end) add(std::min(middle_chunk, middle_end - begin));
  for (int r = end_count - 1; r >= 0; --r) add(end_ramp[r]);
  plan.begins[plan.count] = n;
  return plan;
}

// Streams and events are made once and kept: creating them costs tens of microseconds, and
// streams made in every call would be torn down while their work is still queued. Events are
// one per chunk and stage so that no record has to wait for an earlier wait to be queued.
struct Pipeline {
  cudaStream_t copy_in, copy_out, kernels[kernel_stream_count];
  cudaEvent_t forked;                // what the caller queued on its stream before the call
  cudaEvent_t arrived[max_chunks];   // chunk k's inputs are on the device
  cudaEvent_t merged[max_chunks];    // chunk k's output is on the device
  cudaEvent_t finished;              // the last copy out, which follows every other step

  Pipeline() {
    // Non-blocking: no implicit wait on the legacy default stream, which would serialise
    // every stage against anything else in the process.
    cudaStreamCreateWithFlags(&copy_in, cudaStreamNonBlocking);
    cudaStreamCreateWithFlags(&copy_out, cudaStreamNonBlocking);
    for (cudaStream_t& s : kernels) cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    for (int k = 0; k < max_chunks; ++k) {
      cudaEventCreateWithFlags(&arrived[k], cudaEventDisableTiming);
      cudaEventCreateWithFlags(&merged[k], cudaEventDisableTiming);
    }
    cudaEventCreateWithFlags(&forked, cudaEventDisableTiming);
    cudaEventCreateWithFlags(&finished, cudaEventDisableTiming);
  }
};

Pipeline& pipeline() {
  static Pipeline instance;  // the contract's calls all run on device 0
  return instance;
}

// Chunk k through the three stages; the events carry the order from one stage's stream to
// the next, and each stage's stream keeps its chunks in order.
void enqueue_chunk(Pipeline& p, int k, const uint32_t* h_a, const uint32_t* h_b, uint32_t* h_out, size_t count,
                   int rounds, uint32_t* d_a, uint32_t* d_b, uint32_t* d_out) {
  const size_t bytes = count * sizeof(uint32_t);
  cudaMemcpyAsync(d_a, h_a, bytes, cudaMemcpyHostToDevice, p.copy_in);
  cudaMemcpyAsync(d_b, h_b, bytes, cudaMemcpyHostToDevice, p.copy_in);
  cudaEventRecord(p.arrived[k], p.copy_in);

  cudaStream_t kernel_stream = p.kernels[k % kernel_stream_count];
  cudaStreamWaitEvent(kernel_stream, p.arrived[k], 0);
  const unsigned blocks = unsigned((count + threads_per_block - 1) / threads_per_block);
  merge_chunk_kernel<<<blocks, threads_per_block, 0, kernel_stream>>>(d_a, d_b, d_out, count, rounds);
  cudaEventRecord(p.merged[k], kernel_stream);

  cudaStreamWaitEvent(p.copy_out, p.merged[k], 0);
  cudaMemcpyAsync(h_out, d_out, bytes, cudaMemcpyDeviceToHost, p.copy_out);
}

}  // namespace

extern "C" void merge_pipelined(const uint32_t* h_a, const uint32_t* h_b, uint32_t* h_out, size_t n, int rounds,
                                uint32_t* d_a, uint32_t* d_b, uint32_t* d_out, cudaStream_t stream) {
  if (n == 0) return;
  Pipeline& p = pipeline();
  // Fork: no copy starts before what the caller queued on `stream`; kernels and copies out
  // follow the copies in through the events.
  cudaEventRecord(p.forked, stream);
  cudaStreamWaitEvent(p.copy_in, p.forked, 0);

  // All chunks are queued before any finishes: the host stays ahead of the GPU.
  const ChunkPlan plan = plan_chunks(n);
  for (int k = 0; k < plan.count; ++k) {
    const size_t begin = plan.begins[k];
    enqueue_chunk(p, k, h_a + begin, h_b + begin, h_out + begin, plan.begins[k + 1] - begin, rounds, d_a + begin,
                  d_b + begin, d_out + begin);
  }

  // Join: the last copy out comes after every chunk's every step, so `stream` waits for it
  // and a caller that synchronises only `stream` is safe.
  cudaEventRecord(p.finished, p.copy_out);
  cudaStreamWaitEvent(stream, p.finished, 0);
}
