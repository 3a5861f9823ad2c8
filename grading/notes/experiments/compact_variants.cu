// Issue 22 experiment: lab 07's one-pass compaction and split under other shapes and techniques,
// beside the reference itself (solutions/07-compact/compact.cu, included unchanged) and
// cub::DeviceSelect::If / cub::DevicePartition::If in the same process.
//
// The variants' kernel is the reference's select kernel with its constants made template knobs
// (struct Tuning below): threads per block, float4 loads per thread (rows; the tile is
// threads * rows * 4 elements), the __launch_bounds__ minimum blocks per SM, the look-back
// window (predecessors read at once: the reference reads 32, one per lane), whether the tile's
// aggregate is published before or after the tile is staged in shared memory, and how the
// staged tile is written out (the reference's strided loop; scalar stores at constant offsets
// from one pointer per thread; float4 stores on the aligned body of each output range). The
// reference's helpers (load_slice, count_slice, stage_slice, take_tile, the status words) are
// used as they are. Split adds: the count pass's shape and direction (read back to front so that
// the front of the input is still in L2 when the select pass starts there), the per-call memset
// of the positive count replaced by two alternating words, the count fused into the select
// kernel (its first blocks count, the rest select), and a cooperative one-wave kernel that
// keeps part of the input on chip (shared memory) and the rest in L2 between its count and
// its writes (see the notes in grading/notes/issue22/README.md, "Lab 07").
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -lineinfo -Ilabs/07-compact grading/notes/experiments/compact_variants.cu -o cv
//   cv check            every variant on every size and distribution, outputs bit-exact, count, guards
//   cv time [rounds]    all variants and CUB at 2^24 and 2^28, round-robin, L2 flushed, median
//   CV_ONLY=name,name   only those variants (either mode)
#include "../../../solutions/07-compact/compact.cu"

#include <cooperative_groups.h>
#include <cub/device/device_partition.cuh>
#include <cub/device/device_select.cuh>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace tuned {

#define CHECK(call) check(call, #call, __LINE__)
void check(cudaError_t e, const char* what, int line) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "line %d: %s: %s\n", line, what, cudaGetErrorString(e));
    std::exit(1);
  }
}

// ---- knobs ---------------------------------------------------------------------------------

enum StoreMode { store_loop = 0, store_const = 1, store_vec = 2 };

// The reference was Tuning<256, 8, 1, 32, false, store_loop> (compaction) and
// Tuning<512, 4, 1, 32, false, store_loop> after a count kernel (split); min_blocks 1 is what
// __launch_bounds__(T) alone means. Since this experiment it is "256x8 mb4" (compaction) and
// "fused 256x8 mb3 early vec" (split), so its rows here time those.
template <int Threads, int Rows, int MinBlocks, int Window, bool EarlyPublish, int Store>
struct Tuning {
  static constexpr int threads = Threads;
  static constexpr int rows = Rows;  // float4 loads per thread
  static constexpr int min_blocks = MinBlocks;
  static constexpr int window = Window;
  static constexpr bool early_publish = EarlyPublish;
  static constexpr int store = Store;
  static constexpr int warps = threads / warp_size;
  static constexpr int warp_items = rows * row_items;
  static constexpr int tile_items = warps * warp_items;
  static constexpr int staged_bytes = tile_items * int(sizeof(float));
  static constexpr bool static_staging = staged_bytes <= 48 * 1024;  // else dynamic shared memory
  static constexpr int dynamic_bytes = static_staging ? 0 : staged_bytes;
  static_assert(threads % warp_size == 0, "whole warps");
  static_assert(window == 1 || window == 2 || window == 4 || window == 8 || window == 16 || window == 32,
                "the look-back window is a power of two up to a warp");
};

// ---- look-back with a window ------------------------------------------------------------------
// As the reference's look_back, but only lanes 0 .. window-1 read a predecessor (lane 0 the
// closest); the other lanes count as aggregates of zero. window 32 is the reference's.
template <int window>
__device__ __forceinline__ u32 window_sum(u32 x) {
#pragma unroll
  for (int distance = window / 2; distance > 0; distance >>= 1) x += __shfl_xor_sync(full_mask, x, distance);
  return __shfl_sync(full_mask, x, 0);
}

__device__ __forceinline__ void publish_aggregate(u64* status, int tile, u32 aggregate, u32 epoch) {
  store_status(status + tile, pack_status(epoch, tile == 0 ? flag_prefix : flag_aggregate, aggregate));
}

template <int window>
__device__ u32 look_back_window(u64* status, int tile, u32 aggregate, u32 epoch, int lane, bool publish) {
  if (publish && lane == 0) publish_aggregate(status, tile, aggregate, epoch);
  if (tile == 0) return 0;
  u32 exclusive_prefix = 0;
  for (int window_end = tile - 1;; window_end -= window) {
    const int predecessor = window_end - lane;
    u64 word;
    u32 flag;
    do {
      if (window == warp_size || lane < window)
        word = predecessor >= 0 ? load_status(status + predecessor) : pack_status(epoch, flag_prefix, 0);
      else
        word = pack_status(epoch, flag_aggregate, 0);
      flag = status_flag(word, epoch);
    } while (__any_sync(full_mask, flag == flag_invalid));
    const unsigned prefix_lanes = __ballot_sync(full_mask, flag == flag_prefix);
    const int last_lane = prefix_lanes != 0 ? __ffs(prefix_lanes) - 1 : window - 1;
    exclusive_prefix += window_sum<window>(lane <= last_lane ? u32(word) : 0u);
    if (prefix_lanes != 0) break;
  }
  if (lane == 0) store_status(status + tile, pack_status(epoch, flag_prefix, exclusive_prefix + aggregate));
  return exclusive_prefix;
}

// ---- writing a staged range -------------------------------------------------------------------
// staged[0 .. count) goes to out[0 .. count); nothing else is written. max_per_thread is
// tile_items / threads, the most a range can hold per thread.
template <int store, int threads, int max_per_thread>
__device__ __forceinline__ void write_range(float* out, const float* staged, u32 count) {
  const int t = threadIdx.x;
  if (store == store_const) {
    float* dst = out + t;  // one 64-bit pointer: every store below is at a constant offset
    const float* src = staged + t;
#pragma unroll
    for (int j = 0; j < max_per_thread; ++j)
      if (u32(j * threads + t) < count) dst[j * threads] = src[j * threads];
    return;
  }
  // store_vec: scalar head up to the first 16-byte boundary, float4 body, scalar tail.
  const u32 misaligned = u32(reinterpret_cast<uintptr_t>(out) >> 2) & 3u;
  const u32 head = min(count, (4u - misaligned) & 3u);
  const u32 quads = (count - head) / 4;
  const u32 tail_first = head + 4 * quads;
  if (u32(t) < head) out[t] = staged[t];
  if (u32(t) < count - tail_first) out[tail_first + t] = staged[tail_first + t];
  float4* dst = reinterpret_cast<float4*>(out + head) + t;
  const float* src = staged + head + 4 * t;
#pragma unroll
  for (int j = 0; j < max_per_thread / 4; ++j)
    if (u32(j * threads + t) < quads) {
      const float* s = src + 4 * j * threads;
      dst[j * threads] = make_float4(s[0], s[1], s[2], s[3]);
    }
}

// ---- the select kernel, tuned ----------------------------------------------------------------

struct TunedArgs {
  SelectArgs select;  // the reference's arguments
  const u32* positive_total;  // two-kernel split: the count pass's total
  u64* fused_total;   // fused split: [blocks done : 32 | positives : 32], this call's word
  u64* fused_next;    // the other word, cleared for the next call
  u32 count_blocks;   // fused split: the first count_blocks tickets count, the rest select
};

// The fused split's counting part: a grid-stride read from the back of the input to the front
// (so that the front, where the select tiles start, is the most recent in L2), one 64-bit
// atomic per block adding the count and 1 to the blocks done.
template <int threads>
__device__ void fused_count(const TunedArgs& a, u32 ticket) {
  __shared__ u32 warp_counts[threads / warp_size];
  const float* in = a.select.in;
  const size_t n = a.select.n;
  const size_t vectors = n / 4;
  const size_t stride = size_t(a.count_blocks) * threads;
  const float4* in4 = reinterpret_cast<const float4*>(in);
  u32 count = 0;
  size_t v = size_t(ticket) * threads + threadIdx.x;  // counted from the back: index vectors - 1 - v
  for (; v + 3 * stride < vectors; v += 4 * stride) {
    float4 x[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) x[u] = in4[vectors - 1 - (v + u * stride)];
#pragma unroll
    for (int u = 0; u < 4; ++u)
      count += is_positive(x[u].x) + is_positive(x[u].y) + is_positive(x[u].z) + is_positive(x[u].w);
  }
  for (; v < vectors; v += stride) {
    const float4 x = in4[vectors - 1 - v];
    count += is_positive(x.x) + is_positive(x.y) + is_positive(x.z) + is_positive(x.w);
  }
  if (ticket == 0 && threadIdx.x < n % 4) count += is_positive(in[vectors * 4 + threadIdx.x]);
  if (ticket == 0 && threadIdx.x == 0) *a.fused_next = 0;  // the next call's word; no one reads it now
  count = warp_sum(count);
  if (threadIdx.x % warp_size == 0) warp_counts[threadIdx.x / warp_size] = count;
  __syncthreads();
  if (threadIdx.x == 0) {
    u32 block_count = 0;
    for (int w = 0; w < threads / warp_size; ++w) block_count += warp_counts[w];
    atomicAdd(reinterpret_cast<unsigned long long*>(a.fused_total), (1ull << 32) | block_count);
  }
}

template <bool split, bool fused, class T>
__global__ void __launch_bounds__(T::threads, T::min_blocks) tuned_select_kernel(TunedArgs targs) {
  extern __shared__ float4 dynamic_shared[];
  __shared__ float static_staged[T::static_staging ? T::tile_items : 1];
  float* staged = T::static_staging ? static_staged : reinterpret_cast<float*>(dynamic_shared);
  __shared__ u32 warp_totals[T::warps];
  __shared__ u32 tile_prefix_shared, others_base_shared;
  const SelectArgs& a = targs.select;
  const int lane = threadIdx.x % warp_size;
  const int warp = threadIdx.x / warp_size;

  int tile = take_tile(a.tile_counter, a.tile_count + (fused ? targs.count_blocks : 0));
  if (fused) {
    if (u32(tile) < targs.count_blocks) {
      fused_count<T::threads>(targs, u32(tile));
      return;
    }
    tile -= int(targs.count_blocks);
  }
  const size_t first = size_t(tile) * T::tile_items + size_t(warp) * T::warp_items;
  const bool full_tile = (size_t(tile) + 1) * T::tile_items <= a.n;

  Slice<T::rows> bits;
  load_slice(a.in, a.n, first, full_tile, lane, bits);
  u32 kept_before_lane[T::rows];
  const u32 warp_total = count_slice(bits, lane, kept_before_lane);
  if (lane == 0) warp_totals[warp] = warp_total;
  __syncthreads();
  u32 warp_prefix = 0, tile_aggregate = 0;
#pragma unroll
  for (int w = 0; w < T::warps; ++w) {
    if (w == warp) warp_prefix = tile_aggregate;
    tile_aggregate += warp_totals[w];
  }
  if (T::early_publish && threadIdx.x == 0) publish_aggregate(a.status, tile, tile_aggregate, a.epoch);
  stage_slice<split>(staged, first, a.n, warp * T::warp_items, lane, warp_prefix, tile_aggregate, bits,
                     kept_before_lane);

  if (warp == 0) {
    const u32 tile_prefix = look_back_window<T::window>(a.status, tile, tile_aggregate, a.epoch, lane,
                                                        !T::early_publish);
    if (lane == 0) {
      tile_prefix_shared = tile_prefix;
      if (!split && u32(tile) == a.tile_count - 1) *a.count_out = size_t(tile_prefix) + tile_aggregate;
      if (split && fused) {
        u64 word;
        do word = load_status(targs.fused_total);
        while (u32(word >> 32) != targs.count_blocks);
        others_base_shared = u32(word);
      }
    }
  }
  __syncthreads();
  const u32 kept_before_tile = tile_prefix_shared;
  const size_t tile_first = size_t(tile) * T::tile_items;
  const u32 outputs = split ? u32(min(size_t(T::tile_items), a.n - tile_first)) : tile_aggregate;
  const u32 others_base = split ? (fused ? others_base_shared : *targs.positive_total) : 0u;
  if (T::store == store_loop) {  // the reference's write_tile
    const size_t others_first = others_base + tile_first - kept_before_tile;
    for (u32 t = threadIdx.x; t < outputs; t += T::threads)
      a.out[t < tile_aggregate ? kept_before_tile + t : others_first + (t - tile_aggregate)] = staged[t];
    return;
  }
  constexpr int per_thread = T::tile_items / T::threads;
  write_range<T::store, T::threads, per_thread>(a.out + kept_before_tile, staged, tile_aggregate);
  if (split)
    write_range<T::store, T::threads, per_thread>(a.out + (others_base + tile_first - kept_before_tile),
                                                  staged + tile_aggregate, outputs - tile_aggregate);
}

// ---- the split's count pass, tuned -------------------------------------------------------------
// The reference's count_positive_kernel with its shape as knobs, optionally read back to front,
// and clearing the other of two count words for the next call (so no memset per call).
template <int threads, int unroll, bool reverse>
__global__ void __launch_bounds__(threads) tuned_count_kernel(const float* in, size_t n, u32* total, u32* next_total) {
  const size_t vectors = n / 4;
  const size_t stride = size_t(gridDim.x) * threads;
  const float4* in4 = reinterpret_cast<const float4*>(in);
  auto at = [&](size_t v) { return reverse ? vectors - 1 - v : v; };
  u32 count = 0;
  size_t v = size_t(blockIdx.x) * threads + threadIdx.x;
  for (; v + (unroll - 1) * stride < vectors; v += unroll * stride) {
    float4 x[unroll];
#pragma unroll
    for (int u = 0; u < unroll; ++u) x[u] = in4[at(v + u * stride)];
#pragma unroll
    for (int u = 0; u < unroll; ++u)
      count += is_positive(x[u].x) + is_positive(x[u].y) + is_positive(x[u].z) + is_positive(x[u].w);
  }
  for (; v < vectors; v += stride) {
    const float4 x = in4[at(v)];
    count += is_positive(x.x) + is_positive(x.y) + is_positive(x.z) + is_positive(x.w);
  }
  if (blockIdx.x == 0 && threadIdx.x < n % 4) count += is_positive(in[vectors * 4 + threadIdx.x]);
  if (next_total != nullptr && blockIdx.x == 0 && threadIdx.x == 0) *next_total = 0;
  count = warp_sum(count);
  if (threadIdx.x % warp_size == 0 && count != 0) atomicAdd(total, count);
}

// ---- the cooperative on-chip split ---------------------------------------------------------------
// One block per SM, all resident (cooperative launch). Block b owns a contiguous run of tiles.
// Phase 1 counts every tile: the first slots-1 full tiles of the run are copied into shared
// memory (cp.async, no registers held, L2 evict_first), the rest are read into registers with
// an L2 evict_last hint and only counted. A grid barrier later every block knows the number of
// positives before it and the total. Phase 2 writes: first the tiles that were only counted
// (read again, from L2 where the hint kept them), staged in the last slot, then the tiles in
// shared memory, each staged in place. Traffic from DRAM: one read and one write when the
// input fits in shared memory plus L2 (2^24 does: 64 MiB against ~29 MB + 50 MB); beyond,
// the second read of what L2 did not keep.
template <int Threads, int Rows, int Slots>
struct OnChipTuning {
  static constexpr int threads = Threads;
  static constexpr int rows = Rows;
  static constexpr int slots = Slots;  // tile buffers in shared memory; the last stages re-read tiles
  static constexpr int warps = threads / warp_size;
  static constexpr int warp_items = rows * row_items;
  static constexpr int tile_items = warps * warp_items;
  static constexpr int max_tiles_per_block = threads < 512 ? threads : 512;  // the block scan: one per thread
  static constexpr size_t dynamic_bytes = size_t(slots) * tile_items * sizeof(float);
};

__device__ __forceinline__ u64 policy_evict_last() {
  u64 p;
  asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(p));
  return p;
}
__device__ __forceinline__ u64 policy_evict_first() {
  u64 p;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p));
  return p;
}
__device__ __forceinline__ uint4 load4_hinted(const float* p, u64 policy) {
  uint4 v;
  asm volatile("ld.global.L2::cache_hint.v4.u32 {%0,%1,%2,%3}, [%4], %5;"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p), "l"(policy));
  return v;
}
__device__ __forceinline__ void cp_async16(float* shared_dst, const float* global_src, u64 policy) {
  const u32 dst = u32(__cvta_generic_to_shared(shared_dst));
  asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2;" ::"r"(dst), "l"(global_src),
               "l"(policy)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit_and_wait_all() {
  asm volatile("cp.async.commit_group;\ncp.async.wait_all;" ::: "memory");
}

// A slice of a tile into registers: from global memory (hinted, bounded by n) or from a slot.
template <int rows>
__device__ __forceinline__ void load_slice_hinted(const float* in, size_t n, size_t first, bool full_tile, int lane,
                                                  u64 policy, Slice<rows>& bits) {
  if (!full_tile) {
    load_slice(in, n, first, false, lane, bits);
    return;
  }
  const float* source = in + first + 4 * lane;
#pragma unroll
  for (int j = 0; j < rows; ++j) {
    const uint4 x = load4_hinted(source + j * row_items, policy);
    bits[j][0] = x.x, bits[j][1] = x.y, bits[j][2] = x.z, bits[j][3] = x.w;
  }
}

template <int rows>
__device__ __forceinline__ void load_slice_shared(const float* slot_slice, int lane, Slice<rows>& bits) {
  const uint4* source = reinterpret_cast<const uint4*>(slot_slice) + lane;
#pragma unroll
  for (int j = 0; j < rows; ++j) {
    const uint4 x = source[j * warp_size];
    bits[j][0] = x.x, bits[j][1] = x.y, bits[j][2] = x.z, bits[j][3] = x.w;
  }
}

template <int rows>
__device__ __forceinline__ u32 slice_kept(const Slice<rows>& bits) {
  u32 c = 0;
#pragma unroll
  for (int j = 0; j < rows; ++j) c += kept(bits[j][0]) + kept(bits[j][1]) + kept(bits[j][2]) + kept(bits[j][3]);
  return c;
}

// Sum over the block of x (every thread's) and of x over threads below `below`.
template <int threads>
__device__ __forceinline__ void block_sums(u32 x, u32 below_limit, u32* scratch2, u32& below, u32& total) {
  const int lane = threadIdx.x % warp_size, warp = threadIdx.x / warp_size;
  const u32 b = warp_sum(threadIdx.x < below_limit ? x : 0u);
  const u32 t = warp_sum(x);
  if (lane == 0) scratch2[2 * warp] = b, scratch2[2 * warp + 1] = t;
  __syncthreads();
  below = 0, total = 0;
#pragma unroll
  for (int w = 0; w < threads / warp_size; ++w) below += scratch2[2 * w], total += scratch2[2 * w + 1];
  __syncthreads();
}

template <class T>
__global__ void __launch_bounds__(T::threads, 1)
    split_onchip_kernel(const float* in, size_t n, float* out, u32* block_kept) {
  extern __shared__ float4 dynamic_shared[];
  float* slots = reinterpret_cast<float*>(dynamic_shared);
  float* staging = slots + size_t(T::slots - 1) * T::tile_items;
  __shared__ u32 tile_counts[T::max_tiles_per_block];  // phase 1: kept per tile; then exclusive prefix in block
  __shared__ u32 warp_totals[T::warps];
  __shared__ u32 sums_scratch[2 * T::warps];
  const int lane = threadIdx.x % warp_size, warp = threadIdx.x / warp_size;
  const u32 blocks = gridDim.x, b = blockIdx.x;
  const size_t tile_count = (n + T::tile_items - 1) / T::tile_items;
  const size_t t_begin = tile_count * b / blocks, t_end = tile_count * (b + 1) / blocks;
  const int k = int(t_end - t_begin);
  const size_t full_tiles = n / T::tile_items;
  const int full_in_run = int(min(t_end, max(full_tiles, t_begin)) - t_begin);
  const int on_chip = min(T::slots - 1, full_in_run);  // tiles 0 .. on_chip-1 of the run stay in slots
  const u64 keep = policy_evict_last(), drop = policy_evict_first();
  const size_t slice_offset = size_t(warp) * T::warp_items;

  for (int i = threadIdx.x; i < k; i += T::threads) tile_counts[i] = 0;
  for (int i = 0; i < on_chip; ++i) {
    const float* src = in + (t_begin + i) * T::tile_items + slice_offset + 4 * lane;
    float* dst = slots + size_t(i) * T::tile_items + slice_offset + 4 * lane;
#pragma unroll
    for (int j = 0; j < T::rows; ++j) cp_async16(dst + j * row_items, src + j * row_items, drop);
  }
  __syncthreads();  // tile_counts zeroed
  for (int i = on_chip; i < k; i += 2) {  // two tiles' loads in flight
    const size_t tile = t_begin + i;
    Slice<T::rows> x0, x1;
    load_slice_hinted(in, n, tile * T::tile_items + slice_offset, tile + 1 <= full_tiles, lane, keep, x0);
    const bool second = i + 1 < k;
    if (second)
      load_slice_hinted(in, n, (tile + 1) * T::tile_items + slice_offset, tile + 2 <= full_tiles, lane, keep, x1);
    const u32 c0 = warp_sum(slice_kept(x0));
    if (lane == 0) atomicAdd(&tile_counts[i], c0);
    if (second) {
      const u32 c1 = warp_sum(slice_kept(x1));
      if (lane == 0) atomicAdd(&tile_counts[i + 1], c1);
    }
  }
  cp_async_commit_and_wait_all();
  __syncthreads();
  for (int i = 0; i < on_chip; ++i) {
    Slice<T::rows> x;
    load_slice_shared(slots + size_t(i) * T::tile_items + slice_offset, lane, x);
    const u32 c = warp_sum(slice_kept(x));
    if (lane == 0) atomicAdd(&tile_counts[i], c);
  }
  __syncthreads();
  // Exclusive prefix of the run's tile counts (k <= threads: one per thread).
  {
    const u32 mine = threadIdx.x < u32(k) ? tile_counts[threadIdx.x] : 0u;
    const u32 inclusive = warp_inclusive_scan(mine, lane);
    if (lane == warp_size - 1) warp_totals[warp] = inclusive;
    __syncthreads();
    u32 before = 0, total = 0;
#pragma unroll
    for (int w = 0; w < T::warps; ++w) {
      if (w < warp) before += warp_totals[w];
      total += warp_totals[w];
    }
    if (threadIdx.x < u32(k)) tile_counts[threadIdx.x] = before + inclusive - mine;
    if (threadIdx.x == 0) block_kept[b] = total;
  }
  cooperative_groups::this_grid().sync();
  u32 kept_before_block, positive_total;
  block_sums<T::threads>(threadIdx.x < blocks ? __ldcg(block_kept + threadIdx.x) : 0u, b, sums_scratch,
                         kept_before_block, positive_total);

  constexpr int per_thread = T::tile_items / T::threads;
  auto place_tile = [&](int i, bool from_slot) {
    const size_t tile = t_begin + i;
    const size_t tile_first = tile * T::tile_items;
    const size_t first = tile_first + slice_offset;
    float* stage = from_slot ? slots + size_t(i) * T::tile_items : staging;
    Slice<T::rows> bits;
    if (from_slot)
      load_slice_shared(stage + slice_offset, lane, bits);
    else
      load_slice_hinted(in, n, first, tile + 1 <= full_tiles, lane, drop, bits);
    u32 kept_before_lane[T::rows];
    const u32 warp_total = count_slice(bits, lane, kept_before_lane);
    if (lane == 0) warp_totals[warp] = warp_total;
    __syncthreads();  // also: every thread has read its slice of the slot, and written out the last tile
    u32 warp_prefix = 0, tile_kept = 0;
#pragma unroll
    for (int w = 0; w < T::warps; ++w) {
      if (w == warp) warp_prefix = tile_kept;
      tile_kept += warp_totals[w];
    }
    stage_slice<true>(stage, first, n, int(slice_offset), lane, warp_prefix, tile_kept, bits, kept_before_lane);
    __syncthreads();
    const u32 kept_before_tile = kept_before_block + tile_counts[i];
    const u32 outputs = u32(min(size_t(T::tile_items), n - tile_first));
    write_range<store_vec, T::threads, per_thread>(out + kept_before_tile, stage, tile_kept);
    write_range<store_vec, T::threads, per_thread>(out + (positive_total + tile_first - kept_before_tile),
                                                   stage + tile_kept, outputs - tile_kept);
  };
  for (int i = on_chip; i < k; ++i) place_tile(i, false);
  for (int i = 0; i < on_chip; ++i) place_tile(i, true);
}

// ---- host side -------------------------------------------------------------------------------

int sm_count() {
  static int sms = [] {
    int device = 0, s = 0;
    CHECK(cudaGetDevice(&device));
    CHECK(cudaDeviceGetAttribute(&s, cudaDevAttrMultiProcessorCount, device));
    return s;
  }();
  return sms;
}

// Kept scratch for one variant: [0] tile counter, [1] [2] alternating u32 counts (split),
// [3] [4] alternating fused words, then tile status words, then the on-chip kernel's per-block counts.
struct Scratch {
  u64* words = nullptr;
  size_t tiles = 0;
  u32 epoch = 0;
  u32 calls = 0;
  static constexpr size_t header = 5;
  static constexpr size_t block_words = 1024;
  ~Scratch() { cudaFree(words); }
  void prepare(size_t tile_count, cudaStream_t stream) {
    if (tiles < tile_count) {
      CHECK(cudaFree(words));
      CHECK(cudaMalloc(&words, (header + tile_count + block_words) * sizeof(u64)));
      tiles = tile_count;
      epoch = 0;
    }
    if (epoch == 0 || epoch + 1 == epoch_limit) {
      CHECK(cudaMemsetAsync(words, 0, (header + tiles + block_words) * sizeof(u64), stream));
      epoch = 0;
    }
    ++epoch;
    ++calls;
  }
  u32* tile_counter() const { return reinterpret_cast<u32*>(words); }
  u32* count_word(u32 parity) const { return reinterpret_cast<u32*>(words + 1 + parity); }
  u64* fused_word(u32 parity) const { return words + 3 + parity; }
  u64* status() const { return words + header; }
  u32* block_kept() const { return reinterpret_cast<u32*>(words + header + tiles); }
};

template <class T>
SelectArgs tuned_args(const float* in, size_t n, float* out, const Scratch& s) {
  SelectArgs a{};
  a.in = in;
  a.n = n;
  a.out = out;
  a.tile_counter = s.tile_counter();
  a.status = s.status();
  a.tile_count = u32((n + T::tile_items - 1) / T::tile_items);
  a.epoch = s.epoch;
  return a;
}

template <bool split, bool fused, class T>
const void* select_kernel_address() {
  static const void* k = [] {
    const void* f = reinterpret_cast<const void*>(tuned_select_kernel<split, fused, T>);
    CHECK(cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, T::dynamic_bytes));
    return f;
  }();
  return k;
}

template <bool split, bool fused, class T>
void launch_select(const TunedArgs& a, unsigned blocks, cudaStream_t stream) {
  select_kernel_address<split, fused, T>();
  tuned_select_kernel<split, fused, T><<<blocks, T::threads, T::dynamic_bytes, stream>>>(a);
}

using CompactFunction = std::function<void(const float*, size_t, float*, size_t*, cudaStream_t)>;
using SplitFunction = std::function<void(const float*, size_t, float*, cudaStream_t)>;

// memset_status: clear the status words every call instead of relying on epochs (to measure
// what the epochs save).
template <class T, bool memset_status = false>
CompactFunction tuned_compact() {
  auto scratch = std::make_shared<Scratch>();
  return [scratch](const float* in, size_t n, float* out, size_t* count, cudaStream_t stream) {
    if (n == 0) {
      CHECK(cudaMemsetAsync(count, 0, sizeof(size_t), stream));
      return;
    }
    const size_t tiles = (n + T::tile_items - 1) / T::tile_items;
    scratch->prepare(tiles, stream);
    if (memset_status) {
      CHECK(cudaMemsetAsync(scratch->status(), 0, tiles * sizeof(u64), stream));
      scratch->epoch = 1;
    }
    TunedArgs a{};
    a.select = tuned_args<T>(in, n, out, *scratch);
    a.select.count_out = count;
    launch_select<false, false, T>(a, a.select.tile_count, stream);
  };
}

// Count pass shape for the split.
template <int Threads, int Unroll, int BlocksPerSm, bool Reverse, bool AlternateWords>
struct CountTuning {
  static constexpr int threads = Threads, unroll = Unroll, blocks_per_sm = BlocksPerSm;
  static constexpr bool reverse = Reverse, alternate_words = AlternateWords;
};
using ReferenceCount = CountTuning<256, 4, 8, false, false>;

template <class T, class C>
SplitFunction tuned_split() {
  auto scratch = std::make_shared<Scratch>();
  return [scratch](const float* in, size_t n, float* out, cudaStream_t stream) {
    if (n == 0) return;
    const size_t tiles = (n + T::tile_items - 1) / T::tile_items;
    scratch->prepare(tiles, stream);
    const u32 parity = scratch->calls & 1;
    u32* total = scratch->count_word(parity);
    if (!C::alternate_words) CHECK(cudaMemsetAsync(total, 0, sizeof(u32), stream));
    const size_t blocks_needed = (n / 4 + C::threads - 1) / C::threads;
    const unsigned count_blocks =
        unsigned(std::max<size_t>(1, std::min<size_t>(blocks_needed, size_t(sm_count()) * C::blocks_per_sm)));
    tuned_count_kernel<C::threads, C::unroll, C::reverse><<<count_blocks, C::threads, 0, stream>>>(
        in, n, total, C::alternate_words ? scratch->count_word(parity ^ 1) : nullptr);
    TunedArgs a{};
    a.select = tuned_args<T>(in, n, out, *scratch);
    a.positive_total = total;
    launch_select<true, false, T>(a, a.select.tile_count, stream);
  };
}

template <class T>
SplitFunction fused_split() {
  auto scratch = std::make_shared<Scratch>();
  return [scratch](const float* in, size_t n, float* out, cudaStream_t stream) {
    if (n == 0) return;
    const size_t tiles = (n + T::tile_items - 1) / T::tile_items;
    scratch->prepare(tiles, stream);
    const u32 parity = scratch->calls & 1;
    int resident = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, select_kernel_address<true, true, T>(),
                                                        T::threads, T::dynamic_bytes));
    // As many counting blocks as fit at once (all start before any select block), fewer for small n.
    const size_t wanted = (n / 4 + size_t(T::threads) * 4 - 1) / (size_t(T::threads) * 4);
    TunedArgs a{};
    a.select = tuned_args<T>(in, n, out, *scratch);
    a.count_blocks = u32(std::max<size_t>(1, std::min<size_t>(wanted, size_t(std::max(resident, 1)) * sm_count())));
    a.fused_total = scratch->fused_word(parity);
    a.fused_next = scratch->fused_word(parity ^ 1);
    launch_select<true, true, T>(a, a.select.tile_count + a.count_blocks, stream);
  };
}

template <class T>
SplitFunction onchip_split() {
  auto scratch = std::make_shared<Scratch>();
  return [scratch](const float* in, size_t n, float* out, cudaStream_t stream) {
    if (n == 0) return;
    static const int resident = [] {
      const void* f = reinterpret_cast<const void*>(split_onchip_kernel<T>);
      CHECK(cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, int(T::dynamic_bytes)));
      int r = 0;
      CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&r, f, T::threads, T::dynamic_bytes));
      return r;
    }();
    const size_t tiles = (n + T::tile_items - 1) / T::tile_items;
    const unsigned blocks = unsigned(std::max(resident, 0) * sm_count());
    if (resident < 1 || blocks > Scratch::block_words || blocks > unsigned(T::threads) ||
        tiles > size_t(blocks) * T::max_tiles_per_block) {
      split_positive(in, n, out, stream);  // does not fit this kernel: the reference
      return;
    }
    scratch->prepare(tiles, stream);
    u32* block_kept = scratch->block_kept();
    void* args[] = {&in, &n, &out, &block_kept};
    CHECK(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(split_onchip_kernel<T>), blocks, T::threads,
                                      args, T::dynamic_bytes, stream));
  };
}

// ---- CUB, as labs/07-compact/cub_compact.cuh calls it ----------------------------------------

struct IsPositive {
  __host__ __device__ bool operator()(float x) const { return x > 0.f; }
};

__global__ void reverse_tail_kernel(float* out, size_t n, const size_t* kept_count) {
  const size_t tail = n - *kept_count;
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < tail / 2; i += size_t(gridDim.x) * blockDim.x) {
    const float front = out[*kept_count + i];
    out[*kept_count + i] = out[n - 1 - i];
    out[n - 1 - i] = front;
  }
}

struct CubScratch {
  void* p = nullptr;
  size_t bytes = 0;
  size_t* kept = nullptr;
  ~CubScratch() {
    cudaFree(p);
    cudaFree(kept);
  }
  void reserve(size_t b) {
    if (kept == nullptr) CHECK(cudaMalloc(&kept, sizeof(size_t)));
    if (b <= bytes) return;
    CHECK(cudaFree(p));
    CHECK(cudaMalloc(&p, b));
    bytes = b;
  }
};

CompactFunction cub_select() {
  auto s = std::make_shared<CubScratch>();
  return [s](const float* in, size_t n, float* out, size_t* count, cudaStream_t stream) {
    if (n == 0) {
      CHECK(cudaMemsetAsync(count, 0, sizeof(size_t), stream));
      return;
    }
    size_t bytes = 0;
    CHECK(cub::DeviceSelect::If(nullptr, bytes, in, out, count, int64_t(n), IsPositive{}, stream));
    s->reserve(bytes);
    CHECK(cub::DeviceSelect::If(s->p, bytes, in, out, count, int64_t(n), IsPositive{}, stream));
  };
}

SplitFunction cub_partition(bool reverse_tail) {
  auto s = std::make_shared<CubScratch>();
  return [s, reverse_tail](const float* in, size_t n, float* out, cudaStream_t stream) {
    if (n == 0) return;
    size_t bytes = 0;
    CHECK(cub::DevicePartition::If(nullptr, bytes, in, out, s->kept, int64_t(n), IsPositive{}, stream));
    s->reserve(bytes);
    CHECK(cub::DevicePartition::If(s->p, bytes, in, out, s->kept, int64_t(n), IsPositive{}, stream));
    if (reverse_tail) {
      const unsigned blocks = unsigned(std::max<size_t>(1, (n / 2 + 255) / 256));
      reverse_tail_kernel<<<blocks, 256, 0, stream>>>(out, n, s->kept);
    }
  };
}

// ---- the variants -----------------------------------------------------------------------------

struct CompactVariant {
  std::string name;
  CompactFunction run;
  const void* kernel;  // for the registers / occupancy line; null when not ours
  int threads;
  size_t dynamic_bytes;
};

struct SplitVariant {
  std::string name;
  SplitFunction run;
  const void* kernel;
  int threads;
  size_t dynamic_bytes;
  bool stable = true;  // CUB's partition alone is not: time only
};

template <class T, bool memset_status = false>
CompactVariant compact_variant(const std::string& name) {
  return {name, tuned_compact<T, memset_status>(), select_kernel_address<false, false, T>(), T::threads,
          size_t(T::dynamic_bytes)};
}
template <class T, class C = ReferenceCount>
SplitVariant split_variant(const std::string& name) {
  return {name, tuned_split<T, C>(), select_kernel_address<true, false, T>(), T::threads, size_t(T::dynamic_bytes)};
}
template <class T>
SplitVariant fused_variant(const std::string& name) {
  return {name, fused_split<T>(), select_kernel_address<true, true, T>(), T::threads, size_t(T::dynamic_bytes)};
}
template <class T>
SplitVariant onchip_variant(const std::string& name) {
  const void* f = reinterpret_cast<const void*>(split_onchip_kernel<T>);
  CHECK(cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, int(T::dynamic_bytes)));
  return {name, onchip_split<T>(), f, T::threads, T::dynamic_bytes};
}

// Names: threads x float4 loads per thread, then the knobs that differ from the reference:
// wN look-back window, mbN __launch_bounds__ min blocks, early (aggregate published before
// staging), const / vec (the write-out), memset (status cleared per call).
template <int threads, int rows, int window = 32, bool early = true, int store = store_vec, int min_blocks = 1>
using Tu = Tuning<threads, rows, min_blocks, window, early, store>;

std::vector<CompactVariant> compact_variants() {
  return {
      {"reference", compact_positive, nullptr, 0, 0},
      compact_variant<Tu<256, 8, 32, false, store_loop>>("256x8 (as reference)"),
      compact_variant<Tu<256, 8, 32, false, store_loop>, true>("256x8 memset"),
      compact_variant<Tu<256, 8, 32, false, store_loop, 4>>("256x8 mb4"),
      compact_variant<Tu<256, 8, 32, true, store_loop>>("256x8 early"),
      compact_variant<Tu<256, 8, 32, true, store_const>>("256x8 early const"),
      compact_variant<Tu<256, 8, 32, true, store_vec>>("256x8 early vec"),
      compact_variant<Tu<256, 8, 4, true, store_vec>>("256x8 w4 early vec"),
      compact_variant<Tu<256, 8, 1, true, store_vec>>("256x8 w1 early vec"),
      compact_variant<Tu<256, 8, 32, true, store_vec, 3>>("256x8 mb3 early vec"),
      compact_variant<Tu<256, 8, 32, true, store_vec, 4>>("256x8 mb4 early vec"),
      compact_variant<Tu<256, 6, 32, true, store_vec, 4>>("256x6 mb4 early vec"),
      compact_variant<Tu<256, 4, 32, true, store_vec, 4>>("256x4 mb4 early vec"),
      compact_variant<Tu<256, 2, 32, true, store_vec, 6>>("256x2 mb6 early vec"),
      compact_variant<Tu<128, 8, 32, true, store_vec, 8>>("128x8 mb8 early vec"),
      compact_variant<Tu<128, 4, 32, true, store_vec, 8>>("128x4 mb8 early vec"),
      compact_variant<Tu<384, 4, 32, true, store_vec, 2>>("384x4 mb2 early vec"),
      compact_variant<Tu<512, 4, 32, true, store_vec, 2>>("512x4 mb2 early vec"),
      compact_variant<Tu<512, 8, 32, true, store_vec>>("512x8 early vec"),
      {"cub::DeviceSelect::If", cub_select(), nullptr, 0, 0},
  };
}

using RevCount = CountTuning<256, 4, 8, true, true>;         // back to front, no memset
using RevCount8 = CountTuning<512, 8, 4, true, true>;        // more loads in flight per thread
using FwdCountNoMemset = CountTuning<256, 4, 8, false, true>;

std::vector<SplitVariant> split_variants() {
  return {
      {"reference", split_positive, nullptr, 0, 0},
      split_variant<Tu<512, 4, 32, false, store_loop>>("512x4 (as reference)"),
      split_variant<Tu<512, 4, 32, false, store_loop>, FwdCountNoMemset>("512x4 no-memset"),
      split_variant<Tu<512, 4, 32, false, store_loop>, RevCount>("512x4 revcount"),
      split_variant<Tu<512, 4, 32, true, store_vec>, RevCount>("512x4 early vec revcount"),
      split_variant<Tu<512, 4, 32, true, store_vec>, RevCount8>("512x4 early vec revcount8"),
      split_variant<Tu<256, 8, 32, true, store_vec, 3>, RevCount>("256x8 mb3 early vec revcount"),
      split_variant<Tu<256, 4, 32, true, store_vec, 4>, RevCount>("256x4 mb4 early vec revcount"),
      split_variant<Tu<384, 4, 32, true, store_vec, 2>, RevCount>("384x4 mb2 early vec revcount"),
      split_variant<Tu<512, 4, 4, true, store_vec>, RevCount>("512x4 w4 early vec revcount"),
      fused_variant<Tu<512, 4, 32, true, store_vec>>("fused 512x4 early vec"),
      fused_variant<Tu<256, 8, 32, true, store_vec, 3>>("fused 256x8 mb3 early vec"),
      onchip_variant<OnChipTuning<512, 4, 7>>("onchip 512x4 7 slots"),
      onchip_variant<OnChipTuning<512, 4, 6>>("onchip 512x4 6 slots"),
      onchip_variant<OnChipTuning<1024, 2, 7>>("onchip 1024x2 7 slots"),
      {"cub Partition::If + reverse", cub_partition(true), nullptr, 0, 0},
      {"cub::DevicePartition::If", cub_partition(false), nullptr, 0, 0, false},
  };
}

// CV_ONLY=name,name,...: only those variants (CUB's rows stay, as the yardstick).
template <class V>
std::vector<V> only_wanted(std::vector<V> v) {
  const char* only = std::getenv("CV_ONLY");
  if (only == nullptr) return v;
  const std::string wanted = std::string(",") + only + ",";
  std::vector<V> kept;
  for (V& x : v)
    if (wanted.find("," + x.name + ",") != std::string::npos || x.name.rfind("cub", 0) == 0) kept.push_back(x);
  return kept;
}

// ---- inputs ----------------------------------------------------------------------------------

enum class Dist { signs, all_positive, none_positive, special, sparse };
const char* dist_name(Dist d) {
  switch (d) {
    case Dist::signs: return "signs";
    case Dist::all_positive: return "all-positive";
    case Dist::none_positive: return "none-positive";
    case Dist::special: return "special";
    case Dist::sparse: return "sparse-1%";
  }
  return "?";
}

struct SplitMix {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
};

uint32_t float_bits(float x) {
  uint32_t b;
  std::memcpy(&b, &x, 4);
  return b;
}

// Values as bits. special: random bit patterns (NaNs with payloads of both signs, denormals,
// infinities all occur) with every fourth element one of the edge values.
std::vector<uint32_t> make_input(size_t n, Dist d, uint64_t seed) {
  static const uint32_t edges[] = {0x00000000u, 0x80000000u, 0x7fc00001u, 0xffc12345u, 0x7f800001u, 0xff800000u,
                                   0x7f800000u, 0x00000001u, 0x807fffffu, 0x007fffffu, 0x3f800000u, 0xbf800000u};
  SplitMix rng{seed};
  std::vector<uint32_t> v(n);
  for (size_t i = 0; i < n; ++i) {
    const uint64_t r = rng.next();
    const float u = float(r >> 40) * (1.0f / 16777216.0f);  // [0, 1)
    switch (d) {
      case Dist::signs: v[i] = float_bits(200.f * u - 100.f); break;
      case Dist::all_positive: v[i] = float_bits(1e-3f + 100.f * u); break;
      case Dist::none_positive: v[i] = (r & 7) == 0 ? 0x80000000u * uint32_t(r >> 63) : float_bits(-1e-3f - 100.f * u); break;
      case Dist::special: v[i] = (r & 3) == 0 ? edges[(r >> 8) % 12] : uint32_t(r >> 32); break;
      case Dist::sparse: v[i] = float_bits((r & 127) == 0 ? 1.f + u : -u); break;
    }
  }
  return v;
}

// The contract's predicate on bits: sign clear, not +0, not NaN.
bool positive_bits(uint32_t b) { return b != 0 && b <= 0x7f800000u; }

// ---- checking -------------------------------------------------------------------------------

template <typename T>
struct Buffer {
  T* p = nullptr;
  size_t count = 0;
  explicit Buffer(size_t c) : count(c) { CHECK(cudaMalloc(&p, std::max<size_t>(c, 1) * sizeof(T))); }
  ~Buffer() { cudaFree(p); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
};

constexpr uint32_t guard_word = 0xA5A5A5A5u;  // what a byte memset of 0xA5 leaves
constexpr size_t guard_words = 1024;

// counts[0]: out[i] != expected[i] for i < upto; counts[1]: out[i] != guard for upto <= i < end.
__global__ void compare_kernel(const uint32_t* out, const uint32_t* expected, size_t upto, size_t end,
                               unsigned long long* counts) {
  unsigned long long wrong = 0, touched = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < end; i += size_t(gridDim.x) * blockDim.x) {
    if (i < upto)
      wrong += out[i] != expected[i];
    else
      touched += out[i] != guard_word;
  }
  if (wrong) atomicAdd(&counts[0], wrong);
  if (touched) atomicAdd(&counts[1], touched);
}

struct Verdict {
  unsigned long long wrong = 0, touched = 0;
};

Verdict compare(const float* out, const uint32_t* expected, size_t upto, size_t end, Buffer<unsigned long long>& c) {
  CHECK(cudaMemset(c.p, 0, 2 * sizeof(unsigned long long)));
  compare_kernel<<<528, 256>>>(reinterpret_cast<const uint32_t*>(out), expected, upto, end, c.p);
  Verdict v;
  unsigned long long h[2];
  CHECK(cudaMemcpy(h, c.p, sizeof h, cudaMemcpyDeviceToHost));
  v.wrong = h[0], v.touched = h[1];
  return v;
}

struct Case {
  size_t n;
  Dist dist;
};

std::vector<Case> correctness_cases() {
  std::vector<Case> c;
  const size_t sizes[] = {0, 1, 3, 4, 5, 127, 1000, 1023, 1025, 2047, 2049, 4096, 6143, 6145, 8191, 8192, 8193, 16383, 16384,
                          16385, 24577, 100003, 1000007, size_t(1) << 24, (size_t(1) << 24) + 5};
  for (size_t n : sizes)
    for (Dist d : {Dist::signs, Dist::all_positive, Dist::none_positive, Dist::special, Dist::sparse})
      if (n <= 1000007 || d == Dist::signs || d == Dist::special) c.push_back({n, d});
  c.push_back({(size_t(1) << 28), Dist::signs});
  c.push_back({(size_t(1) << 28) + 3, Dist::special});
  return c;
}

void check_correctness(const std::vector<CompactVariant>& cv, const std::vector<SplitVariant>& sv) {
  size_t free_bytes = 0, total_bytes = 0;
  CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  std::vector<int> compact_failures(cv.size()), split_failures(sv.size());
  Buffer<unsigned long long> counts(2);
  int cases_run = 0;
  for (const Case& c : correctness_cases()) {
    if (4 * (4 * c.n + guard_words) + (size_t(1) << 30) > free_bytes) {
      std::printf("check n=%-10zu %-13s skipped: not enough device memory\n", c.n, dist_name(c.dist));
      continue;
    }
    ++cases_run;
    const std::vector<uint32_t> input = make_input(c.n, c.dist, c.n * 7919 + uint64_t(c.dist));
    std::vector<uint32_t> expected;
    expected.reserve(c.n);
    for (uint32_t b : input)
      if (positive_bits(b)) expected.push_back(b);
    const size_t kept_count = expected.size();
    for (uint32_t b : input)
      if (!positive_bits(b)) expected.push_back(b);
    Buffer<uint32_t> d_input(c.n), d_pristine(c.n), d_expected(c.n), d_out(c.n + guard_words);
    Buffer<size_t> d_count(1);
    CHECK(cudaMemcpy(d_input.p, input.data(), c.n * 4, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_pristine.p, input.data(), c.n * 4, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_expected.p, expected.data(), c.n * 4, cudaMemcpyHostToDevice));
    const float* in = reinterpret_cast<const float*>(d_input.p);
    float* out = reinterpret_cast<float*>(d_out.p);
    std::string line;
    auto input_intact = [&] { return compare(reinterpret_cast<const float*>(d_input.p), d_pristine.p, c.n, c.n, counts).wrong == 0; };
    for (size_t v = 0; v < cv.size(); ++v) {
      std::string bad;
      for (int repeat = 0; repeat < 2; ++repeat) {  // twice: what the first call leaves must not matter
        CHECK(cudaMemset(d_out.p, 0xA5, (c.n + guard_words) * 4));
        CHECK(cudaMemset(d_count.p, 0x5A, sizeof(size_t)));
        cv[v].run(in, c.n, out, d_count.p, 0);
        CHECK(cudaGetLastError());
        CHECK(cudaDeviceSynchronize());
        size_t count = 0;
        CHECK(cudaMemcpy(&count, d_count.p, sizeof count, cudaMemcpyDeviceToHost));
        const Verdict r = compare(out, d_expected.p, kept_count, c.n + guard_words, counts);
        if (count != kept_count) bad += " COUNT(" + std::to_string(count) + ")";
        if (r.wrong) bad += " WRONG(" + std::to_string(r.wrong) + ")";
        if (r.touched) bad += " PAST-COUNT(" + std::to_string(r.touched) + ")";
        if (!input_intact()) bad += " INPUT";
        if (!bad.empty()) break;
      }
      if (!bad.empty()) {
        ++compact_failures[v];
        line += "  compact " + cv[v].name + bad;
      }
    }
    for (size_t v = 0; v < sv.size(); ++v) {
      if (!sv[v].stable) continue;
      std::string bad;
      for (int repeat = 0; repeat < 2; ++repeat) {
        CHECK(cudaMemset(d_out.p, 0xA5, (c.n + guard_words) * 4));
        sv[v].run(in, c.n, out, 0);
        CHECK(cudaGetLastError());
        CHECK(cudaDeviceSynchronize());
        const Verdict r = compare(out, d_expected.p, c.n, c.n + guard_words, counts);
        if (r.wrong) bad += " WRONG(" + std::to_string(r.wrong) + ")";
        if (r.touched) bad += " PAST-N(" + std::to_string(r.touched) + ")";
        if (!input_intact()) bad += " INPUT";
        if (!bad.empty()) break;
      }
      if (!bad.empty()) {
        ++split_failures[v];
        line += "  split " + sv[v].name + bad;
      }
    }
    std::printf("check n=%-10zu %-13s kept %-10zu %s\n", c.n, dist_name(c.dist), kept_count,
                line.empty() ? "all right" : line.c_str());
    std::fflush(stdout);
  }
  for (size_t v = 0; v < cv.size(); ++v)
    std::printf("correctness compact %-30s %d of %d cases failed\n", cv[v].name.c_str(), compact_failures[v], cases_run);
  for (size_t v = 0; v < sv.size(); ++v)
    if (sv[v].stable)
      std::printf("correctness split   %-30s %d of %d cases failed\n", sv[v].name.c_str(), split_failures[v], cases_run);
}

// ---- timing ------------------------------------------------------------------------------------

double median(std::vector<float> x) {
  std::sort(x.begin(), x.end());
  return x.size() % 2 ? x[x.size() / 2] : 0.5 * (x[x.size() / 2 - 1] + x[x.size() / 2]);
}

// rows: the functions to time, each called as run(stream); the last `anchors` rows are CUB.
struct TimedRow {
  std::string name;
  std::function<void(cudaStream_t)> run;
};

void time_rows(const char* label, const std::vector<TimedRow>& rows, int rounds, double bytes,
               const std::vector<std::string>& anchor_names) {
  Buffer<uint8_t> flush(size_t(256) << 20);
  std::vector<std::vector<float>> ms(rows.size());
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  for (int round = 0; round < rounds + 1; ++round) {  // round 0 warms up
    for (size_t r = 0; r < rows.size(); ++r) {
      CHECK(cudaMemsetAsync(flush.p, round & 0xff, flush.count, 0));
      CHECK(cudaDeviceSynchronize());
      CHECK(cudaEventRecord(start, 0));
      rows[r].run(0);
      CHECK(cudaEventRecord(stop, 0));
      CHECK(cudaEventSynchronize(stop));
      CHECK(cudaGetLastError());
      float t = 0;
      CHECK(cudaEventElapsedTime(&t, start, stop));
      if (round > 0) ms[r].push_back(t);
    }
  }
  CHECK(cudaEventDestroy(start));
  CHECK(cudaEventDestroy(stop));
  std::vector<double> anchor_ms;
  for (const std::string& a : anchor_names)
    for (size_t r = 0; r < rows.size(); ++r)
      if (rows[r].name == a) anchor_ms.push_back(median(ms[r]));
  for (size_t r = 0; r < rows.size(); ++r) {
    const double t = median(ms[r]);
    std::printf("%-12s %-30s %8.4f ms %7.1f GB/s", label, rows[r].name.c_str(), t, bytes / (t * 1e-3) / 1e9);
    for (size_t a = 0; a < anchor_ms.size(); ++a) std::printf("  %6.1f%% of %s", 100 * anchor_ms[a] / t, anchor_names[a].c_str());
    std::printf("  (min %.4f, max %.4f)\n", *std::min_element(ms[r].begin(), ms[r].end()),
                *std::max_element(ms[r].begin(), ms[r].end()));
  }
  std::fflush(stdout);
}

void time_size(const char* size_label, size_t n, int rounds, const std::vector<CompactVariant>& cv,
               const std::vector<SplitVariant>& sv) {
  const std::vector<uint32_t> input = make_input(n, Dist::signs, 42);
  size_t kept = 0;
  for (uint32_t b : input) kept += positive_bits(b);
  Buffer<uint32_t> d_input(n), d_out(n);
  Buffer<size_t> d_count(1);
  CHECK(cudaMemcpy(d_input.p, input.data(), n * 4, cudaMemcpyHostToDevice));
  const float* in = reinterpret_cast<const float*>(d_input.p);
  float* out = reinterpret_cast<float*>(d_out.p);
  size_t* count = d_count.p;

  std::vector<TimedRow> rows;
  for (const CompactVariant& v : cv) rows.push_back({v.name, [&v, in, n, out, count](cudaStream_t s) { v.run(in, n, out, count, s); }});
  std::string label = std::string("compact ") + size_label;
  time_rows(label.c_str(), rows, rounds, 4.0 * n + 4.0 * kept, {"cub::DeviceSelect::If"});
  rows.clear();
  for (const SplitVariant& v : sv) rows.push_back({v.name, [&v, in, n, out](cudaStream_t s) { v.run(in, n, out, s); }});
  label = std::string("split ") + size_label;
  time_rows(label.c_str(), rows, rounds, 8.0 * n, {"cub::DevicePartition::If", "cub Partition::If + reverse"});
}

void print_kernel_facts(const std::vector<CompactVariant>& cv, const std::vector<SplitVariant>& sv) {
  auto facts = [](const char* what, const std::string& name, const void* kernel, int threads, size_t dynamic) {
    if (kernel == nullptr) return;
    cudaFuncAttributes a;
    CHECK(cudaFuncGetAttributes(&a, kernel));
    int blocks = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, threads, dynamic));
    std::printf("kernel %-7s %-30s %3d registers, %3zu B local, %6zu B shared, %d blocks (%2d warps) per SM\n", what,
                name.c_str(), a.numRegs, a.localSizeBytes, a.sharedSizeBytes + dynamic, blocks, blocks * threads / 32);
  };
  for (const CompactVariant& v : cv) facts("compact", v.name, v.kernel, v.threads, v.dynamic_bytes);
  for (const SplitVariant& v : sv) facts("split", v.name, v.kernel, v.threads, v.dynamic_bytes);
}

}  // namespace tuned

int main(int argc, char** argv) {
  using namespace tuned;
  const std::string mode = argc > 1 ? argv[1] : "time";
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 15;
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  int clock_khz = 0;
  cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0);
  std::printf("%s, %d SMs, %d MHz max SM clock, %zu MiB L2\n", prop.name, prop.multiProcessorCount, clock_khz / 1000,
              size_t(prop.l2CacheSize) >> 20);
  const std::vector<CompactVariant> cv = only_wanted(compact_variants());
  const std::vector<SplitVariant> sv = only_wanted(split_variants());
  if (mode == "check") {
    print_kernel_facts(cv, sv);
    check_correctness(cv, sv);
    return 0;
  }
  time_size("2^24", size_t(1) << 24, rounds, cv, sv);
  time_size("2^28", size_t(1) << 28, rounds, cv, sv);
  return 0;
}
