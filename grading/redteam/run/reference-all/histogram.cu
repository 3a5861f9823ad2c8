// Lab 01 reference solution: shared-memory privatization done well.
//
// Over the chapter's shared-memory kernel it changes two things:
//  1. Wide loads: each thread reads 16 bytes at a time, four loads in flight, so the memory
//     system sees few, large, coalesced requests (the chapter read one byte per thread).
//  2. One copy of the histogram per lane, interleaved: bin b of lane l lives at word
//     b * 32 + l, which is in bank l. The 32 atomics of a warp instruction therefore always
//     touch 32 different banks, whatever the data: no bank conflicts on random bytes, and no
//     serialisation when every byte is the same (the chapter's worst case, where all lanes
//     hit one counter). Lanes of different warps share a copy, so the adds stay atomic.
#include "histogram.h"

namespace {

constexpr int bin_count = 256;
constexpr int lanes = 32;

struct HistogramTuning {
  static constexpr int threads_per_block = 512;
  static constexpr int loads_in_flight = 4;  // 16-byte loads per thread per iteration
};

// 32 KiB of shared memory per block: one interleaved copy of the bins per lane.
constexpr size_t shared_bytes = size_t(bin_count) * lanes * sizeof(uint32_t);
static_assert(shared_bytes <= 48 * 1024, "the lane copies must fit the default shared-memory limit");

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

// `head` and `tail` are the bytes before the first and after the last 16-byte boundary;
// `body` is the aligned middle, read as uint4.
__global__ void __launch_bounds__(HistogramTuning::threads_per_block)
    histogram_lane_privatized_kernel(const uint8_t* head, uint32_t head_bytes, const uint4* body,
                                     size_t body_vectors, const uint8_t* tail, uint32_t tail_bytes,
                                     uint32_t* bins) {
  __shared__ uint32_t block_bins[bin_count * lanes];
  for (int i = threadIdx.x; i < bin_count * lanes; i += blockDim.x) block_bins[i] = 0;
  __syncthreads();

  uint32_t* lane_bins = block_bins + threadIdx.x % lanes;
  const size_t thread = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  constexpr int unroll = HistogramTuning::loads_in_flight;

  size_t i = thread;
  for (; i + (unroll - 1) * stride < body_vectors; i += unroll * stride) {
    uint4 v[unroll];
#pragma unroll
    for (int u = 0; u < unroll; ++u) v[u] = __ldcs(body + i + u * stride);  // streamed once
#pragma unroll
    for (int u = 0; u < unroll; ++u) count_vector(lane_bins, v[u]);
  }
  for (; i < body_vectors; i += stride) count_vector(lane_bins, __ldcs(body + i));
  if (thread < head_bytes) atomicAdd(&lane_bins[head[thread] * lanes], 1u);
  if (thread < tail_bytes) atomicAdd(&lane_bins[tail[thread] * lanes], 1u);
  __syncthreads();

  // Thread b sums bin b over the 32 lane copies, starting at a different lane than its
  // neighbours so the reads spread over all banks.
  for (int bin = threadIdx.x; bin < bin_count; bin += blockDim.x) {
    uint32_t sum = 0;
#pragma unroll
    for (int l = 0; l < lanes; ++l) sum += block_bins[bin * lanes + (l + bin) % lanes];
    if (sum != 0) atomicAdd(&bins[bin], sum);
  }
}

// Enough blocks to fill every SM, fewer when the input is too small to share out.
int grid_size(size_t body_vectors) {
  static const int resident_blocks = [] {
    int device = 0, sm_count = 0, per_sm = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, device);
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, histogram_lane_privatized_kernel,
                                                  HistogramTuning::threads_per_block, 0);
    return sm_count * (per_sm > 0 ? per_sm : 1);
  }();
  const size_t per_block = size_t(HistogramTuning::threads_per_block) * HistogramTuning::loads_in_flight;
  const size_t needed = (body_vectors + per_block - 1) / per_block;
  return int(needed < size_t(resident_blocks) ? (needed > 0 ? needed : 1) : resident_blocks);
}

}  // namespace

extern "C" void histogram(const uint8_t* d_in, size_t n, uint32_t* d_bins, cudaStream_t stream) {
  cudaMemsetAsync(d_bins, 0, bin_count * sizeof(uint32_t), stream);
  if (n == 0) return;

  const size_t misalignment = reinterpret_cast<uintptr_t>(d_in) % sizeof(uint4);
  const size_t to_boundary = misalignment == 0 ? 0 : sizeof(uint4) - misalignment;
  const size_t head_bytes = to_boundary < n ? to_boundary : n;
  const size_t body_vectors = (n - head_bytes) / sizeof(uint4);
  const uint8_t* body = d_in + head_bytes;
  const uint8_t* tail = body + body_vectors * sizeof(uint4);
  const size_t tail_bytes = n - head_bytes - body_vectors * sizeof(uint4);

  histogram_lane_privatized_kernel<<<grid_size(body_vectors), HistogramTuning::threads_per_block, 0, stream>>>(
      d_in, uint32_t(head_bytes), reinterpret_cast<const uint4*>(body), body_vectors, tail,
      uint32_t(tail_bytes), d_bins);
}
