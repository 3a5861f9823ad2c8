// Lab 02 reference solution: a dot product at the memory system's pace, and an arg-max
// with one 64-bit atomic per block.
//
// Over the chapter's kernel (one element per thread, thread 0 adding the block's products
// one by one, one global update per 32 elements) it changes four things:
//  1. Few blocks, many elements each: a grid-stride loop over the whole input by just
//     enough blocks to fill the GPU, so the per-block fixed cost is paid ~1000 times, not
//     n / 32 times.
//  2. Wide loads: 16 bytes per load, four loads of each input in flight per thread, so
//     the memory system always has enough requests to stay busy.
//  3. The block's sum by warp shuffles (log2(32) steps, no shared-memory round trips),
//     then one shared slot per warp: no thread walks the block's values serially.
//  4. One atomicAdd per block into *d_result, which cudaMemsetAsync zeroed first in the
//     same stream. Unsigned 64-bit arithmetic throughout: it wraps modulo 2^64 as the
//     contract says, where signed overflow would be undefined.
#include "dot.h"

namespace {

struct DotTuning {
  static constexpr int threads_per_block = 256;
  static constexpr int loads_in_flight = 4;  // 16-byte loads of each input per iteration
};

constexpr int warp_size = 32;
using u64 = unsigned long long;  // the type 64-bit atomicAdd takes

__device__ __forceinline__ u64 product(int32_t a, int32_t b) { return u64(int64_t(a) * int64_t(b)); }

__device__ __forceinline__ u64 dot4(int4 a, int4 b) {
  return product(a.x, b.x) + product(a.y, b.y) + product(a.z, b.z) + product(a.w, b.w);
}

__device__ __forceinline__ u64 warp_sum(u64 value) {
#pragma unroll
  for (int offset = warp_size / 2; offset > 0; offset /= 2) value += __shfl_down_sync(0xFFFFFFFFu, value, offset);
  return value;
}

// Every thread of the block calls it; one atomic per block carries the block's sum out.
__device__ __forceinline__ void add_block_sum(u64 thread_sum, u64* result) {
  __shared__ u64 warp_sums[DotTuning::threads_per_block / warp_size];
  const int lane = threadIdx.x % warp_size;
  const int warp = threadIdx.x / warp_size;
  thread_sum = warp_sum(thread_sum);
  if (lane == 0) warp_sums[warp] = thread_sum;
  __syncthreads();
  if (warp != 0) return;
  thread_sum = lane < DotTuning::threads_per_block / warp_size ? warp_sums[lane] : 0;
  thread_sum = warp_sum(thread_sum);
  if (lane == 0 && thread_sum != 0) atomicAdd(result, thread_sum);
}

// The elements before the first and after the last 16-byte boundary (at most 3 each).
struct Edges {
  const int32_t* head_a;
  const int32_t* head_b;
  uint32_t head_count;
  const int32_t* tail_a;
  const int32_t* tail_b;
  uint32_t tail_count;
};

// Both inputs equally misaligned: int4 loads of the aligned middle of each; the first few
// threads also take one head and one tail element, so no second launch is needed.
__global__ void __launch_bounds__(DotTuning::threads_per_block)
    dot_vectorized_kernel(const int4* a, const int4* b, size_t vectors, Edges edges, u64* result) {
  const size_t thread = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  constexpr int unroll = DotTuning::loads_in_flight;
  u64 sum = 0;
  size_t i = thread;
  for (; i + (unroll - 1) * stride < vectors; i += unroll * stride) {
    int4 va[unroll], vb[unroll];
#pragma unroll
    for (int u = 0; u < unroll; ++u) {
      va[u] = __ldcs(a + i + u * stride);  // read once: keep it out of L2's way
      vb[u] = __ldcs(b + i + u * stride);
    }
#pragma unroll
    for (int u = 0; u < unroll; ++u) sum += dot4(va[u], vb[u]);
  }
  for (; i < vectors; i += stride) sum += dot4(__ldcs(a + i), __ldcs(b + i));
  if (thread < edges.head_count) sum += product(edges.head_a[thread], edges.head_b[thread]);
  if (thread < edges.tail_count) sum += product(edges.tail_a[thread], edges.tail_b[thread]);
  add_block_sum(sum, result);
}

// Inputs misaligned differently, so no common 16-byte boundary: the same loop with
// 4-byte loads, more of them in flight.
__global__ void __launch_bounds__(DotTuning::threads_per_block)
    dot_scalar_kernel(const int32_t* a, const int32_t* b, size_t n, u64* result) {
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  constexpr int unroll = 4 * DotTuning::loads_in_flight;
  u64 sum = 0;
  size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  for (; i + (unroll - 1) * stride < n; i += unroll * stride) {
    int32_t va[unroll], vb[unroll];
#pragma unroll
    for (int u = 0; u < unroll; ++u) {
      va[u] = __ldcs(a + i + u * stride);
      vb[u] = __ldcs(b + i + u * stride);
    }
#pragma unroll
    for (int u = 0; u < unroll; ++u) sum += product(va[u], vb[u]);
  }
  for (; i < n; i += stride) sum += product(__ldcs(a + i), __ldcs(b + i));
  add_block_sum(sum, result);
}

int resident_blocks() {
  static const int blocks = [] {
    int device = 0, sm_count = 0, per_sm = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, device);
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, dot_vectorized_kernel, DotTuning::threads_per_block, 0);
    return sm_count * (per_sm > 0 ? per_sm : 1);
  }();
  return blocks;
}

// Enough blocks to fill every SM, fewer when there is too little work to share out.
int grid_size(size_t items, size_t items_per_thread) {
  const size_t per_block = size_t(DotTuning::threads_per_block) * items_per_thread;
  const size_t needed = (items + per_block - 1) / per_block;
  return int(needed < size_t(resident_blocks()) ? (needed > 0 ? needed : 1) : resident_blocks());
}

void launch_scalar(const int32_t* a, const int32_t* b, size_t n, u64* result, cudaStream_t stream) {
  dot_scalar_kernel<<<grid_size(n, 4 * DotTuning::loads_in_flight), DotTuning::threads_per_block, 0, stream>>>(
      a, b, n, result);
}

size_t misalignment(const int32_t* p) { return reinterpret_cast<uintptr_t>(p) % sizeof(int4); }

// ---- arg-max -------------------------------------------------------------------------
// A candidate is packed into one 64-bit word that orders like (value, -index): the value,
// shifted to unsigned so that unsigned order is signed order, in the high half; the
// bitwise complement of the index in the low half, so a smaller index wins a tie. Then
// one atomicMax updates value and index together: two separate atomics could not.
__device__ __forceinline__ u64 pack_candidate(int32_t value, uint32_t index) {
  return (u64(uint32_t(value) ^ 0x80000000u) << 32) | u64(~index);
}
__host__ __device__ inline int64_t unpacked_index(u64 packed) { return int64_t(~uint32_t(packed)); }

constexpr int argmax_threads_per_block = 256;

__device__ __forceinline__ u64 warp_max(u64 value) {
#pragma unroll
  for (int offset = warp_size / 2; offset > 0; offset /= 2)
    value = max(value, __shfl_down_sync(0xFFFFFFFFu, value, offset));
  return value;
}

// Each warp reduces its lanes' best candidates by shuffles; lane 0 of each warp issues
// one atomicMax. No shared memory, no block barrier.
__global__ void __launch_bounds__(argmax_threads_per_block)
    argmax_packed_atomic_kernel(const int32_t* in, size_t n, u64* best) {
  u64 candidate = 0;  // below every packed value but (INT_MIN, index 2^32 - 1), out of range
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += stride)
    candidate = max(candidate, pack_candidate(__ldcs(in + i), uint32_t(i)));
  candidate = warp_max(candidate);
  if (threadIdx.x % warp_size == 0) atomicMax(best, candidate);
}

__global__ void unpack_index_kernel(const u64* best, int64_t* index) { *index = unpacked_index(*best); }

// Scratch word for the packed candidate, one per device ordinal in use.
u64* packed_scratch() {
  static u64* scratch[64] = {};
  int device = 0;
  cudaGetDevice(&device);
  if (scratch[device] == nullptr) cudaMalloc(&scratch[device], sizeof(u64));
  return scratch[device];
}

}  // namespace

extern "C" void dot(const int32_t* d_a, const int32_t* d_b, size_t n, int64_t* d_result, cudaStream_t stream) {
  u64* result = reinterpret_cast<u64*>(d_result);
  cudaMemsetAsync(result, 0, sizeof(u64), stream);
  if (n == 0) return;
  if (misalignment(d_a) != misalignment(d_b)) {
    launch_scalar(d_a, d_b, n, result, stream);
    return;
  }
  size_t head = (sizeof(int4) - misalignment(d_a)) % sizeof(int4) / sizeof(int32_t);
  if (head > n) head = n;
  const size_t vectors = (n - head) / 4;
  const size_t body_end = head + 4 * vectors;
  const Edges edges{d_a, d_b, uint32_t(head), d_a + body_end, d_b + body_end, uint32_t(n - body_end)};
  dot_vectorized_kernel<<<grid_size(vectors, DotTuning::loads_in_flight), DotTuning::threads_per_block, 0, stream>>>(
      reinterpret_cast<const int4*>(d_a + head), reinterpret_cast<const int4*>(d_b + head), vectors, edges, result);
}

extern "C" void argmax(const int32_t* d_in, size_t n, int64_t* d_index, cudaStream_t stream) {
  u64* best = packed_scratch();
  cudaMemsetAsync(best, 0, sizeof(u64), stream);
  const size_t per_block = size_t(argmax_threads_per_block) * 16;
  const size_t needed = (n + per_block - 1) / per_block;
  const int blocks = int(needed < size_t(resident_blocks()) ? (needed > 0 ? needed : 1) : resident_blocks());
  argmax_packed_atomic_kernel<<<blocks, argmax_threads_per_block, 0, stream>>>(d_in, n, best);
  unpack_index_kernel<<<1, 1, 0, stream>>>(best, d_index);
}
