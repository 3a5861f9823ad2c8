// Lab 07 part 2 reference: the chapter's split (scatter back) in one pass, with the same
// decoupled look-back as compact.cu's compaction, read the other way.
//
// The compaction's addresses serve both directions: kept element i is the r-th kept one,
// r = the number kept before i, so the compaction writes it to out[r] and the expansion reads
// out[i] from packed[r]. The look-back that gives a compaction tile the number kept before it
// gives an expansion tile the start of its run of packed values, and the tile's kept elements
// take that run in order.
//
// Each block takes the next tile of 8192 elements (256 threads x 8 float4 loads), as
// compact.cu. It keeps of its input only one bit per element (kept or not) and, per lane and
// row, how many of the slice's kept elements come before the lane's four: the values of d_in
// are never needed again. Once the look-back has the tile's start in d_packed, the block reads
// its run of packed values into shared memory in coalesced float4 loads, then every thread
// writes its own four elements per row as one float4 store: a packed value where kept, +0.0f
// elsewhere. So d_in is read once, d_packed once (only its count values, nothing past them),
// and d_out written once, every element of it: no flags, no scan array, no clear.
//
// The chapter's way (labs/07-compact/expand.cu and grading/policy/chapter/) moves about four
// times the bytes: flags written and read back, a scan over them in three kernels, a memset of
// d_out before a scatter that reads d_in and the scan again.
//
// The tile shape and blocks per SM are compact.cu's (256 threads x 8 float4 loads, 4 blocks
// per SM: at most 64 registers), not measured for this kernel on its own.
#include "compact.h"

#include <mutex>

namespace {

using u32 = uint32_t;
using u64 = unsigned long long;

constexpr int warp_size = 32;
constexpr unsigned full_mask = 0xffffffffu;
constexpr int row_items = warp_size * 4;  // one float4 per lane: 512 contiguous bytes

constexpr int block_threads = 256;
constexpr int block_warps = block_threads / warp_size;
constexpr int slice_rows = 8;                         // float4 loads per thread
constexpr int warp_items = slice_rows * row_items;    // a warp's slice of the tile
constexpr int tile_items = block_warps * warp_items;  // 8192
constexpr int expand_blocks_per_sm = 4;
static_assert(slice_rows * 4 == 32, "a thread's kept bits fit one 32-bit mask");

// The contract's predicate. NaN compares false, and so do both zeros.
__device__ __forceinline__ u32 is_positive(float x) { return x > 0.f ? 1u : 0u; }

// ---- tile status (as compact.cu) -------------------------------------------------------
// One 64-bit word per tile: [epoch : 30 | flag : 2 | value : 32]. Value and flag travel in one
// store, so a reader never sees a flag without its value. Words from earlier calls carry an
// older epoch and read as "not yet published", so nothing is cleared between calls.
enum TileFlag : u32 { flag_invalid = 0, flag_aggregate = 1, flag_prefix = 2 };
constexpr u32 epoch_limit = 1u << 30;

__device__ __forceinline__ u64 pack_status(u32 epoch, u32 flag, u32 value) {
  return (u64((epoch << 2) | flag) << 32) | value;
}

__device__ __forceinline__ u32 status_flag(u64 word, u32 epoch) {
  return u32(word >> 34) == epoch ? u32(word >> 32) & 3u : u32(flag_invalid);
}

// Relaxed at GPU scope: the load goes to L2 and is never hoisted out of the spin loop.
__device__ __forceinline__ u64 load_status(const u64* address) {
  u64 word;
  asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(word) : "l"(address) : "memory");
  return word;
}

__device__ __forceinline__ void store_status(u64* address, u64 word) {
  asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(address), "l"(word) : "memory");
}

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

// ---- decoupled look-back (one warp per tile, as compact.cu) ------------------------------

// Tile 0 has no predecessors: its aggregate is already its inclusive prefix.
__device__ __forceinline__ void publish_aggregate(u64* status, int tile, u32 aggregate, u32 epoch) {
  store_status(status + tile, pack_status(epoch, tile == 0 ? flag_prefix : flag_aggregate, aggregate));
}

// Once the tile's aggregate is published: walks back 32 predecessors at a time until one has
// its inclusive prefix, publishes this tile's inclusive prefix and returns its exclusive one.
__device__ u32 look_back(u64* status, int tile, u32 aggregate, u32 epoch, int lane) {
  if (tile == 0) return 0;
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

// Tickets in the order blocks start, so that the blocks a tile waits on are already running;
// the block taking the last ticket resets the counter for the next call.
__device__ __forceinline__ int take_tile(u32* tile_counter, u32 ticket_count) {
  __shared__ u32 ticket_shared;
  if (threadIdx.x == 0) {
    const u32 ticket = atomicAdd(tile_counter, 1u);
    if (ticket == ticket_count - 1) atomicExch(tile_counter, 0u);
    ticket_shared = ticket;
  }
  __syncthreads();
  return int(ticket_shared);
}

// ---- one tile ----------------------------------------------------------------------------
// Warp w of a tile owns warp_items contiguous elements, as slice_rows rows of 128; in row j,
// lane l holds elements j * 128 + 4 l .. + 3, and bit 4 j + k of its mask says whether
// element j * 128 + 4 l + k is kept.

struct ExpandArgs {
  const float* in;
  const float* packed;
  size_t n;
  float* out;
  u32* tile_counter;
  u64* status;
  u32 tile_count;
  u32 epoch;
};

// Loads the slice and keeps one bit per element; elements past n are not kept.
__device__ __forceinline__ u32 load_kept_mask(const float* in, size_t n, size_t first, bool full_tile, int lane) {
  u32 mask = 0;
  if (full_tile) {
    const float4* source = reinterpret_cast<const float4*>(in + first) + lane;
    float4 x[slice_rows];
#pragma unroll
    for (int j = 0; j < slice_rows; ++j) x[j] = source[j * warp_size];  // all loads in flight first
#pragma unroll
    for (int j = 0; j < slice_rows; ++j)
      mask |= (is_positive(x[j].x) | is_positive(x[j].y) << 1 | is_positive(x[j].z) << 2 | is_positive(x[j].w) << 3)
              << (4 * j);
    return mask;
  }
#pragma unroll
  for (int j = 0; j < slice_rows; ++j)
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const size_t i = first + size_t(j) * row_items + 4 * lane + k;
      if (i < n) mask |= is_positive(in[i]) << (4 * j + k);
    }
  return mask;
}

// For each row, how many of the slice's kept elements come before the lane's four; returns
// the slice's total. The rows' shuffle scans do not depend on each other, so they overlap.
__device__ __forceinline__ u32 count_slice(u32 mask, int lane, u32 (&kept_before_lane)[slice_rows]) {
  u32 row_inclusive[slice_rows];
#pragma unroll
  for (int j = 0; j < slice_rows; ++j) row_inclusive[j] = warp_inclusive_scan(__popc((mask >> (4 * j)) & 0xFu), lane);
  u32 carry = 0;  // kept elements in the slice's earlier rows
#pragma unroll
  for (int j = 0; j < slice_rows; ++j) {
    kept_before_lane[j] = carry + row_inclusive[j] - __popc((mask >> (4 * j)) & 0xFu);
    carry += __shfl_sync(full_mask, row_inclusive[j], warp_size - 1);
  }
  return carry;
}

// Where a tile's run of packed values starts in shared memory: as many floats past a 16-byte
// boundary as the run's start is in d_packed, so that both sides of its float4 body align.
__device__ __forceinline__ u32 staging_offset(const float* packed) {
  return u32(reinterpret_cast<uintptr_t>(packed) / sizeof(float)) % 4;
}

// Reads packed[0 .. count) into staged[0 .. count) and nothing past it: a scalar head up to
// the first 16-byte boundary of packed, float4 loads and stores on the body, a scalar tail.
// A tile's run starts anywhere; a float4 is one instruction for four elements. `staged` is
// as far past a 16-byte boundary as `packed` (staging_offset).
__device__ __forceinline__ void read_packed_range(float* staged, const float* packed, u32 count) {
  const u32 t = threadIdx.x;
  const u32 head = min(count, (4u - staging_offset(packed)) % 4);
  const u32 quads = (count - head) / 4;
  const u32 tail_first = head + 4 * quads;
  if (t < head) staged[t] = packed[t];
  if (t < count - tail_first) staged[tail_first + t] = packed[tail_first + t];
  const float4* body = reinterpret_cast<const float4*>(packed + head);
  float4* target = reinterpret_cast<float4*>(staged + head);
  constexpr u32 quads_per_thread = tile_items / 4 / block_threads;
  float4 x[quads_per_thread];
#pragma unroll
  for (u32 j = 0; j < quads_per_thread; ++j) {  // all loads in flight before the first store
    const u32 q = j * block_threads + t;
    if (q < quads) x[j] = body[q];
  }
#pragma unroll
  for (u32 j = 0; j < quads_per_thread; ++j) {
    const u32 q = j * block_threads + t;
    if (q < quads) target[q] = x[j];
  }
}

}  // namespace

// External linkage for the kernel, as compact.cu's (ptxas allocates registers differently for
// an internal kernel at the same bound).
namespace lab07_reference_expand {

__global__ void __launch_bounds__(block_threads, expand_blocks_per_sm) expand_positive_kernel(ExpandArgs a) {
  __shared__ __align__(16) float staging[tile_items + 4];
  __shared__ u32 warp_totals[block_warps];
  __shared__ u32 kept_before_tile_shared;
  const int lane = threadIdx.x % warp_size;
  const int warp = threadIdx.x / warp_size;
  const int tile = take_tile(a.tile_counter, a.tile_count);
  const size_t first = size_t(tile) * tile_items + size_t(warp) * warp_items;
  const bool full_tile = (size_t(tile) + 1) * tile_items <= a.n;

  const u32 mask = load_kept_mask(a.in, a.n, first, full_tile, lane);
  u32 kept_before_lane[slice_rows];
  const u32 warp_total = count_slice(mask, lane, kept_before_lane);
  if (lane == 0) warp_totals[warp] = warp_total;
  __syncthreads();
  u32 warp_prefix = 0, tile_kept = 0;
#pragma unroll
  for (int w = 0; w < block_warps; ++w) {
    if (w == warp) warp_prefix = tile_kept;
    tile_kept += warp_totals[w];
  }
  if (warp == 0) {
    if (lane == 0) publish_aggregate(a.status, tile, tile_kept, a.epoch);
    const u32 kept_before_tile = look_back(a.status, tile, tile_kept, a.epoch, lane);
    if (lane == 0) kept_before_tile_shared = kept_before_tile;
  }
  __syncthreads();
  const float* run = a.packed + kept_before_tile_shared;
  float* staged = staging + staging_offset(run);
  read_packed_range(staged, run, tile_kept);
  __syncthreads();

  // Kept element i takes the packed value of its rank in the tile; the others are +0.0f.
#pragma unroll
  for (int j = 0; j < slice_rows; ++j) {
    u32 rank = warp_prefix + kept_before_lane[j];
    float v[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) v[k] = (mask >> (4 * j + k)) & 1u ? staged[rank++] : 0.f;
    const size_t i = first + size_t(j) * row_items + 4 * lane;
    if (full_tile) {
      reinterpret_cast<float4*>(a.out + i)[0] = make_float4(v[0], v[1], v[2], v[3]);
    } else {
#pragma unroll
      for (int k = 0; k < 4; ++k)
        if (i + k < a.n) a.out[i + k] = v[k];
    }
  }
}

}  // namespace lab07_reference_expand

namespace {

using lab07_reference_expand::expand_positive_kernel;

// ---- host side --------------------------------------------------------------------------

// Kept per device between calls and grown when a call needs more tiles: word 0 holds the
// tile counter, words 1.. the tile status. Because of it, calls on one device must not
// overlap in time.
struct DeviceScratch {
  u64* words = nullptr;
  size_t tiles = 0;
  u32 epoch = 0;  // 0 is never used, so zeroed words read as "not published"
};
constexpr size_t header_words = 1;

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
    if (cudaMalloc(&mine.words, (tile_count + header_words) * sizeof(u64)) != cudaSuccess) return nullptr;
    mine.tiles = tile_count;
    mine.epoch = 0;
  }
  if (mine.epoch == 0 || mine.epoch + 1 == epoch_limit) {  // new memory, or epochs run out
    if (cudaMemsetAsync(mine.words, 0, (mine.tiles + header_words) * sizeof(u64), stream) != cudaSuccess)
      return nullptr;
    mine.epoch = 0;
  }
  ++mine.epoch;
  return &mine;
}

size_t tiles_for(size_t n) { return (n + tile_items - 1) / tile_items; }  // at most 2^17

}  // namespace

extern "C" void expand_positive(const float* d_in, const float* d_packed, size_t n, float* d_out,
                                cudaStream_t stream) {
  if (n == 0) return;
  DeviceScratch* scratch = scratch_for(tiles_for(n), stream);
  if (scratch == nullptr) return;  // the CUDA error stays visible to the caller
  ExpandArgs a{};
  a.in = d_in;
  a.packed = d_packed;
  a.n = n;
  a.out = d_out;
  a.tile_counter = reinterpret_cast<u32*>(scratch->words);
  a.status = scratch->words + header_words;
  a.tile_count = u32(tiles_for(n));
  a.epoch = scratch->epoch;
  expand_positive_kernel<<<a.tile_count, block_threads, 0, stream>>>(a);
}
