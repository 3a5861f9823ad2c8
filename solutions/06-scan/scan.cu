// Lab 06 reference: a single-pass inclusive scan with decoupled look-back (Merrill and
// Garland, "Single-pass Parallel Prefix Scan with Decoupled Look-back", 2016), the method
// behind cub::DeviceScan, written out without CUB.
//
// Each block takes the next tile of 16384 elements, scans it in registers (32 elements per
// thread, read with 16-byte loads; warp shuffles across lanes; a small shared array across
// warps), then finds the sum of everything before the tile by looking back at the tiles
// before it. Every tile publishes its own total (its aggregate) as soon as it has it, and its
// inclusive prefix once it has that; a tile adds up predecessors' aggregates until it meets
// one with a published inclusive prefix. Memory sees each element twice, one read and one
// write, as a copy does: the chapter's three-kernel scan sees it four times.
#include "scan.h"

#include <mutex>

namespace {

using u32 = uint32_t;
using u64 = unsigned long long;

// H100: 512 threads with eight uint4 loads each (64 KiB of input per tile in flight) won a
// sweep of 128-512 threads x 2-8 loads; with 256 threads and four loads each the scan ran
// behind cub::DeviceScan at 2^28 (the sweep: docs/design/06-scan.md).
struct ScanTuning {
  static constexpr int threads_per_block = 512;
  static constexpr int vectors_per_thread = 8;  // uint4 loads (4 elements each) per thread
};

constexpr int warp_size = 32;
constexpr unsigned full_mask = 0xffffffffu;
constexpr int threads = ScanTuning::threads_per_block;
constexpr int warps_per_block = threads / warp_size;
constexpr int rows = ScanTuning::vectors_per_thread;  // a warp's tile slice is `rows` rows
constexpr int row_items = warp_size * 4;              // one uint4 per lane: 512 contiguous bytes
constexpr int warp_items = rows * row_items;
constexpr int tile_items = warps_per_block * warp_items;
static_assert(threads % warp_size == 0, "blocks are made of whole warps");

// ---- tile status ------------------------------------------------------------------------
// One 64-bit word per tile: [epoch : 30 | flag : 2 | value : 32]. Value and flag travel in one
// store, so a reader never sees a flag without its value and needs no fence. The epoch is the
// call's number: words left over from earlier calls carry an older one and read as "not yet
// published", so the status array needs no clearing between calls.
enum TileFlag : u32 { flag_invalid = 0, flag_aggregate = 1, flag_prefix = 2 };
constexpr u32 epoch_limit = 1u << 30;

__device__ __forceinline__ u64 pack_status(u32 epoch, u32 flag, u32 value) {
  return (u64((epoch << 2) | flag) << 32) | value;
}

__device__ __forceinline__ u32 status_flag(u64 word, u32 epoch) {
  return u32(word >> 34) == epoch ? u32(word >> 32) & 3u : u32(flag_invalid);
}

// Relaxed at GPU scope: the load goes to L2 (not a stale L1 line) and is never hoisted out of
// the spin loop.
__device__ __forceinline__ u64 load_status(const u64* address) {
  u64 word;
  asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(word) : "l"(address) : "memory");
  return word;
}

__device__ __forceinline__ void store_status(u64* address, u64 word) {
  asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(address), "l"(word) : "memory");
}

// ---- warp-level building blocks --------------------------------------------------------

// Hillis-Steele inside a warp: 5 shuffle steps, no shared memory, no barrier.
__device__ __forceinline__ u32 warp_inclusive_scan(u32 x, int lane) {
  for (int distance = 1; distance < warp_size; distance <<= 1) {
    const u32 below = __shfl_up_sync(full_mask, x, distance);
    if (lane >= distance) x += below;
  }
  return x;
}

__device__ __forceinline__ u32 warp_sum(u32 x) {
  for (int distance = warp_size / 2; distance > 0; distance >>= 1) x += __shfl_xor_sync(full_mask, x, distance);
  return x;
}

// ---- a warp's slice of a tile ----------------------------------------------------------
// Warp w of a tile owns warp_items contiguous elements, as `rows` rows of 128; in row j,
// lane l holds elements j * 128 + 4 l .. + 3 in v[j][0..3]. Every load and store of a row is
// one 512-byte contiguous access by the warp.
using Slice = u32[rows][4];

__device__ __forceinline__ void load_full_slice(const int32_t* in, size_t first, int lane, Slice& v) {
  const uint4* source = reinterpret_cast<const uint4*>(in + first) + lane;
#pragma unroll
  for (int j = 0; j < rows; ++j) {
    const uint4 x = source[j * warp_size];
    v[j][0] = x.x, v[j][1] = x.y, v[j][2] = x.z, v[j][3] = x.w;
  }
}

// The last tile: elements past n read as zero, which changes no sum before them.
__device__ __forceinline__ void load_partial_slice(const int32_t* in, size_t n, size_t first, int lane, Slice& v) {
#pragma unroll
  for (int j = 0; j < rows; ++j)
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const size_t i = first + size_t(j) * row_items + 4 * lane + k;
      v[j][k] = i < n ? u32(in[i]) : 0u;
    }
}

__device__ __forceinline__ void store_full_slice(int32_t* out, size_t first, int lane, const Slice& v) {
  uint4* target = reinterpret_cast<uint4*>(out + first) + lane;
#pragma unroll
  for (int j = 0; j < rows; ++j) target[j * warp_size] = make_uint4(v[j][0], v[j][1], v[j][2], v[j][3]);
}

__device__ __forceinline__ void store_partial_slice(int32_t* out, size_t n, size_t first, int lane, const Slice& v) {
#pragma unroll
  for (int j = 0; j < rows; ++j)
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const size_t i = first + size_t(j) * row_items + 4 * lane + k;
      if (i < n) out[i] = int32_t(v[j][k]);
    }
}

// Scans the warp's slice in place and returns its total. The rows' shuffle scans do not
// depend on each other, so they overlap; only the cheap carry between rows is serial.
__device__ __forceinline__ u32 scan_slice(Slice& v, int lane) {
  u32 lane_total[rows], row_inclusive[rows];
#pragma unroll
  for (int j = 0; j < rows; ++j) {
    v[j][1] += v[j][0];
    v[j][2] += v[j][1];
    v[j][3] += v[j][2];
    lane_total[j] = v[j][3];
    row_inclusive[j] = warp_inclusive_scan(lane_total[j], lane);
  }
  u32 carry = 0;  // the sum of the slice's earlier rows
#pragma unroll
  for (int j = 0; j < rows; ++j) {
    const u32 before_lane = carry + row_inclusive[j] - lane_total[j];
#pragma unroll
    for (int k = 0; k < 4; ++k) v[j][k] += before_lane;
    carry += __shfl_sync(full_mask, row_inclusive[j], warp_size - 1);
  }
  return carry;
}

__device__ __forceinline__ void add_to_slice(Slice& v, u32 offset) {
#pragma unroll
  for (int j = 0; j < rows; ++j)
#pragma unroll
    for (int k = 0; k < 4; ++k) v[j][k] += offset;
}

// ---- decoupled look-back (one warp per tile) --------------------------------------------

// Publishes the tile's aggregate, walks back 32 predecessors at a time until one has its
// inclusive prefix, publishes this tile's inclusive prefix and returns its exclusive one.
// Every predecessor took its tile before this one did, so it is running and will publish
// its aggregate without waiting for anyone: the spin always ends.
__device__ u32 look_back(u64* status, int tile, u32 aggregate, u32 epoch, int lane) {
  if (tile == 0) {
    if (lane == 0) store_status(status, pack_status(epoch, flag_prefix, aggregate));
    return 0;
  }
  if (lane == 0) store_status(status + tile, pack_status(epoch, flag_aggregate, aggregate));

  u32 exclusive_prefix = 0;
  for (int window_end = tile - 1;; window_end -= warp_size) {
    const int predecessor = window_end - lane;  // lane 0 reads the closest one
    u64 word;
    u32 flag;
    do {  // before tile 0 there is nothing: a prefix of zero
      word = predecessor >= 0 ? load_status(status + predecessor) : pack_status(epoch, flag_prefix, 0);
      flag = status_flag(word, epoch);
    } while (__any_sync(full_mask, flag == flag_invalid));

    const unsigned prefix_lanes = __ballot_sync(full_mask, flag == flag_prefix);
    const int last_lane = prefix_lanes != 0 ? __ffs(prefix_lanes) - 1 : warp_size - 1;
    exclusive_prefix += warp_sum(lane <= last_lane ? u32(word) : 0u);
    if (prefix_lanes != 0) break;
  }
  if (lane == 0) store_status(status + tile, pack_status(epoch, flag_prefix, exclusive_prefix + aggregate));
  return exclusive_prefix;
}

// Tiles are numbered in the order blocks start (an atomic counter), not by blockIdx: that
// order is what guarantees a tile's predecessors are already running. The block that takes
// the last tile resets the counter for the next call.
__device__ __forceinline__ int take_tile(u32* tile_counter, u32 tile_count) {
  __shared__ u32 tile_shared;
  if (threadIdx.x == 0) {
    const u32 tile = atomicAdd(tile_counter, 1u);
    if (tile == tile_count - 1) atomicExch(tile_counter, 0u);
    tile_shared = tile;
  }
  __syncthreads();
  return int(tile_shared);
}

__global__ void __launch_bounds__(threads)
    scan_decoupled_look_back_kernel(const int32_t* in, size_t n, int32_t* out, u32* tile_counter, u64* status,
                                    u32 tile_count, u32 epoch) {
  __shared__ u32 warp_totals[warps_per_block];
  __shared__ u32 tile_prefix_shared;
  const int lane = threadIdx.x % warp_size;
  const int warp = threadIdx.x / warp_size;

  const int tile = take_tile(tile_counter, tile_count);
  const size_t first = size_t(tile) * tile_items + size_t(warp) * warp_items;
  const bool full_tile = (size_t(tile) + 1) * tile_items <= n;

  Slice v;
  if (full_tile)
    load_full_slice(in, first, lane, v);
  else
    load_partial_slice(in, n, first, lane, v);

  const u32 warp_total = scan_slice(v, lane);
  if (lane == 0) warp_totals[warp] = warp_total;
  __syncthreads();
  u32 warp_prefix = 0, tile_aggregate = 0;
#pragma unroll
  for (int w = 0; w < warps_per_block; ++w) {
    if (w == warp) warp_prefix = tile_aggregate;
    tile_aggregate += warp_totals[w];
  }

  if (warp == 0) {
    const u32 tile_prefix = look_back(status, tile, tile_aggregate, epoch, lane);
    if (lane == 0) tile_prefix_shared = tile_prefix;
  }
  __syncthreads();
  add_to_slice(v, tile_prefix_shared + warp_prefix);

  if (full_tile)
    store_full_slice(out, first, lane, v);
  else
    store_partial_slice(out, n, first, lane, v);
}

// ---- host side --------------------------------------------------------------------------

// Kept per device between calls and grown when a call needs more tiles: word 0 holds the
// tile counter, words 1.. the tile status. Because of it, calls on one device must not
// overlap in time (two streams scanning at once would share it).
struct DeviceScratch {
  u64* words = nullptr;
  size_t tiles = 0;
  u32 epoch = 0;  // 0 is never used, so zeroed words read as "not published"
};

DeviceScratch* scratch_for(size_t tile_count, cudaStream_t stream) {
  constexpr int max_devices = 64;
  static DeviceScratch scratch[max_devices];
  static std::mutex mutex;
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || device >= max_devices) return nullptr;
  std::lock_guard<std::mutex> lock(mutex);
  DeviceScratch& mine = scratch[device];
  if (mine.tiles < tile_count) {
    if (mine.words != nullptr) cudaFree(mine.words);  // waits for calls still using it
    mine.words = nullptr;
    mine.tiles = 0;
    if (cudaMalloc(&mine.words, (tile_count + 1) * sizeof(u64)) != cudaSuccess) return nullptr;
    mine.tiles = tile_count;
    mine.epoch = 0;
  }
  if (mine.epoch == 0 || mine.epoch + 1 == epoch_limit) {  // new memory, or epochs run out
    if (cudaMemsetAsync(mine.words, 0, (mine.tiles + 1) * sizeof(u64), stream) != cudaSuccess) return nullptr;
    mine.epoch = 0;
  }
  ++mine.epoch;
  return &mine;
}

}  // namespace

extern "C" void inclusive_scan(const int32_t* d_in, size_t n, int32_t* d_out, cudaStream_t stream) {
  if (n == 0) return;
  const size_t tile_count = (n + tile_items - 1) / tile_items;  // at most 2^18 for n = 2^30
  DeviceScratch* scratch = scratch_for(tile_count, stream);
  if (scratch == nullptr) return;  // the CUDA error stays visible to the caller
  scan_decoupled_look_back_kernel<<<unsigned(tile_count), threads, 0, stream>>>(
      d_in, n, d_out, reinterpret_cast<u32*>(scratch->words), scratch->words + 1, u32(tile_count), scratch->epoch);
}
