// Lab 01 reference solution: shared-memory privatization done well, with its fixed costs cut.
//
// Over the chapter's shared-memory kernel it changes three things:
//  1. Wide loads: each thread reads 16 bytes at a time, eight loads in flight, so the memory
//     system sees few, large, coalesced requests (the chapter read one byte per thread). The
//     loads are marked streaming (evict first): at 100 MiB that is faster than plain
//     loads, because a line read then evicts another streamed line rather than one of the
//     dirty lines that the L2 flush before every timed call leaves behind.
//  2. One copy of the histogram per lane, interleaved: bin b of lane l lives at word
//     b * 32 + l, which is in bank l. The 32 atomics of a warp instruction therefore always
//     touch 32 different banks, whatever the data: no bank conflicts on random bytes, and no
//     serialisation when every byte is the same (the chapter's worst case, where all lanes
//     hit one counter). Lanes of different warps share a copy, so the adds stay atomic.
//  3. Few, long-lived blocks: one of 1024 threads per SM. Each block zeroes and merges its
//     32 KiB of lane copies once, so fewer blocks pay that less often, and their merges
//     contend less on the 256 global counters; each thread issues its first loads before it
//     zeroes the shared bins, so the zeroing runs under their latency.
// At 100 MiB the kernel runs within a few percent of one that only reads the input with the
// same launch shape: launch, ramp-up and the write-back of the dirty lines the L2 flush leaves
// cost the rest. The measurements, and the shapes tried before this one: docs/design/01-histogram.md.
#include "histogram.h"

namespace {

constexpr int bin_count = 256;
constexpr int lanes = 32;

struct HistogramTuning {
  static constexpr int threads_per_block = 1024;
  static constexpr int blocks_per_sm = 1;     // 2 x 1024 or 4 x 512 per SM measured slower at 100 MiB
  static constexpr int loads_in_flight = 8;  // 16-byte loads per thread per iteration (64 registers)
};
constexpr int threads = HistogramTuning::threads_per_block;
constexpr int unroll = HistogramTuning::loads_in_flight;

// 32 KiB of shared memory per block: one interleaved copy of the bins per lane.
constexpr size_t shared_bytes = size_t(bin_count) * lanes * sizeof(uint32_t);
static_assert(shared_bytes <= 48 * 1024, "the lane copies must fit the default shared-memory limit");
static_assert(threads % bin_count == 0, "the merge gives each bin the same number of threads");

__device__ __forceinline__ void count_word(uint32_t* lane_bins, uint32_t word) {
#pragma unroll
  for (int b = 0; b < 4; ++b) atomicAdd(&lane_bins[((word >> (8 * b)) & 0xFF) * lanes], 1u);
}

__device__ __forceinline__ void count_vector(uint32_t* lane_bins, uint4 v) {
  count_word(lane_bins, v.x);
  count_word(lane_bins, v.y);
  count_word(lane_bins, v.z);
  count_word(lane_bins, v.w);
}

__device__ __forceinline__ void load_batch(uint4 (&v)[unroll], const uint4* body, size_t i, size_t stride) {
#pragma unroll
  for (int u = 0; u < unroll; ++u) v[u] = __ldcs(body + i + u * stride);  // streamed once
}

__device__ __forceinline__ void zero_shared_bins(uint32_t* block_bins) {
  for (int i = threadIdx.x; i < bin_count * lanes / 4; i += threads)
    reinterpret_cast<uint4*>(block_bins)[i] = make_uint4(0, 0, 0, 0);
}

// Four threads per bin, each summing 8 of the 32 lane copies, starting at a lane that puts
// the 32 threads of a warp in 32 different banks; then one global atomic per bin per block.
__device__ void merge_into(uint32_t* bins, const uint32_t* block_bins) {
  constexpr int parts = threads / bin_count;
  constexpr int lanes_per_part = lanes / parts;
  const int bin = threadIdx.x / parts;
  const int part = threadIdx.x % parts;
  uint32_t sum = 0;
#pragma unroll
  for (int l = 0; l < lanes_per_part; ++l) sum += block_bins[bin * lanes + (part * lanes_per_part + l + bin) % lanes];
#pragma unroll
  for (int offset = parts / 2; offset > 0; offset /= 2) sum += __shfl_down_sync(0xFFFFFFFFu, sum, offset, parts);
  if (part == 0 && sum != 0) atomicAdd(&bins[bin], sum);
}

// `head` and `tail` are the bytes before the first and after the last 16-byte boundary;
// `body` is the aligned middle, read as uint4.
__global__ void __launch_bounds__(threads)
    histogram_lane_privatized_kernel(const uint8_t* head, uint32_t head_bytes, const uint4* body,
                                     size_t body_vectors, const uint8_t* tail, uint32_t tail_bytes,
                                     uint32_t* bins) {
  __shared__ uint32_t block_bins[bin_count * lanes];
  const size_t thread = blockIdx.x * size_t(threads) + threadIdx.x;
  const size_t stride = size_t(gridDim.x) * threads;

  // The first loads go out before anything else, so the setup below runs under their latency.
  uint4 v[unroll];
  size_t i = thread;
  bool full_batch = i + (unroll - 1) * stride < body_vectors;
  if (full_batch) load_batch(v, body, i, stride);
  zero_shared_bins(block_bins);
  __syncthreads();

  uint32_t* lane_bins = block_bins + threadIdx.x % lanes;
  while (full_batch) {
#pragma unroll
    for (int u = 0; u < unroll; ++u) count_vector(lane_bins, v[u]);
    i += unroll * stride;
    full_batch = i + (unroll - 1) * stride < body_vectors;
    if (full_batch) load_batch(v, body, i, stride);
  }
  for (; i < body_vectors; i += stride) count_vector(lane_bins, __ldcs(body + i));
  if (thread < head_bytes) atomicAdd(&lane_bins[head[thread] * lanes], 1u);
  if (thread < tail_bytes) atomicAdd(&lane_bins[tail[thread] * lanes], 1u);
  __syncthreads();

  merge_into(bins, block_bins);
}

// The blocks that fit on the GPU at once, fewer when the input is too small to share out.
int grid_size(size_t body_vectors) {
  static const int resident_blocks = [] {
    int device = 0, sm_count = 0, per_sm = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, device);
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, histogram_lane_privatized_kernel, threads, 0);
    const int fitting = per_sm < HistogramTuning::blocks_per_sm ? per_sm : HistogramTuning::blocks_per_sm;
    return sm_count * (fitting > 0 ? fitting : 1);
  }();
  const size_t per_block = size_t(threads) * unroll;
  const size_t needed = (body_vectors + per_block - 1) / per_block;
  return int(needed < size_t(resident_blocks) ? (needed > 0 ? needed : 1) : resident_blocks);
}

}  // namespace

extern "C" void histogram(const uint8_t* d_in, size_t n, uint32_t* d_bins, cudaStream_t stream) {
  // Zeroing inside the kernel instead (block 0 zeroes, the others wait on a flag before they
  // merge; or the last block to finish writes the bins) measured no faster than this memset,
  // and needs state that outlives the call.
  cudaMemsetAsync(d_bins, 0, bin_count * sizeof(uint32_t), stream);
  if (n == 0) return;

  const size_t misalignment = reinterpret_cast<uintptr_t>(d_in) % sizeof(uint4);
  const size_t to_boundary = misalignment == 0 ? 0 : sizeof(uint4) - misalignment;
  const size_t head_bytes = to_boundary < n ? to_boundary : n;
  const size_t body_vectors = (n - head_bytes) / sizeof(uint4);
  const uint8_t* body = d_in + head_bytes;
  const uint8_t* tail = body + body_vectors * sizeof(uint4);
  const size_t tail_bytes = n - head_bytes - body_vectors * sizeof(uint4);

  histogram_lane_privatized_kernel<<<grid_size(body_vectors), threads, 0, stream>>>(
      d_in, uint32_t(head_bytes), reinterpret_cast<const uint4*>(body), body_vectors, tail,
      uint32_t(tail_bytes), d_bins);
}
