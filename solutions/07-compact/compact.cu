// Lab 07 reference: stream compaction and split in one pass over the input, with the
// decoupled look-back of lab 06 (Merrill and Garland, 2016) carrying counts instead of sums,
// the method behind cub::DeviceSelect, written out without CUB.
//
// Each block takes the next tile (256 threads x 8 or 12 float4 loads: 8192 or 12288 elements)
// and counts the kept ones as integers: in registers within a thread, warp shuffles across
// lanes, a small shared array across warps. The tile's number of kept elements is its aggregate; the
// look-back finds how many were kept before the tile. The tile's outputs are gathered in
// shared memory in output order, then written out in whole coalesced rows.
//
// Compaction reads each element once and writes each kept one once. A stable split in one
// output buffer must know the total number of positives before it can place its first
// non-positive, so it reads the input twice (count, then place) and writes it once: 12 bytes
// per element against the 8 of cub::DevicePartition::If, which writes the others backwards
// from the end and so reverses them (not stable).
//
// Beyond the chapter (a sweep of tile shapes and their variants beside CUB, with its numbers:
// docs/design/07-compact.md):
// - The compaction picks its tile by n: 8 loads per thread, 4 blocks per SM below 2^26
//   elements; 12 loads, 3 blocks per SM from there (CompactShape below). __launch_bounds__
//   holds each shape to its blocks per SM (64 and 80 registers): left to the compiler, the
//   8-load kernel once took 72 registers (3 blocks per SM) and ran slower.
// - Four rows' per-lane counts share one shuffle scan, a byte each (count_slice): fewer
//   shuffles, and few enough registers that the 12-load tile fits 3 blocks per SM unspilled.
// - The split counts in the same launch as it selects. The first tickets of the tile counter
//   count the positives, reading the input from the back to the front, so that the front,
//   where the first select tiles read, is what L2 holds last; the later tickets select as in
//   the compaction and wait for the total only after their look-back, just before writing.
//   It also publishes each tile's aggregate before staging the tile, writes each output range
//   with float4 stores on its aligned body, and runs 3 blocks per SM. That beats a count
//   kernel after a memset followed by the select kernel, and CUB's stable equivalent
//   (partition, then reverse the others); the unstable cub::DevicePartition::If, which reads
//   the input once, stays ahead at 2^28.
#include "compact.h"

#include <algorithm>
#include <mutex>

namespace {

using u32 = uint32_t;
using u64 = unsigned long long;

constexpr int warp_size = 32;
constexpr unsigned full_mask = 0xffffffffu;
constexpr int row_items = warp_size * 4;  // one float4 per lane: 512 contiguous bytes

// Blocks of 256 threads, each thread loading `rows` float4s of its block's tile: a tile is
// 256 x rows x 4 elements. The fastest shapes of sweeps of 128-512 threads x 2-16 loads
// (docs/design/07-compact.md): 8 loads (8192 elements) for the split and for a compaction of
// fewer than 2^26 elements, 12 loads (12288) for a larger compaction.
constexpr int block_threads = 256;
constexpr int block_warps = block_threads / warp_size;
__host__ __device__ constexpr int tile_items_for(int rows) { return block_warps * rows * row_items; }

constexpr int slice_rows = 8;                                   // the split's float4 loads per thread
constexpr int tile_items = tile_items_for(slice_rows);          // the split's tile: 8192
constexpr int items_per_thread = tile_items / block_threads;    // 32
static_assert(tile_items == 8192, "the tile the measurements were made with");

// The compaction's shapes, picked by n. A larger tile spends its block's barriers and look-back
// on more elements, and more of the input is on its way per SM (3 blocks x 48 KiB against 4 x
// 32 KiB), which wins at 2^28 (55 waves of blocks). At 2^24 (4 waves) the two are within noise
// of each other, and the 8-load tile, which the smaller sizes were tuned and checked with,
// stays below 2^26. Where between the two measured sizes the larger tile starts to win is not
// measured.
// blocks_per_sm is what __launch_bounds__ asks for: it caps the registers at 64 (8 loads) and
// 80 (12 loads, and the split's 8), which is what the kernels need without spilling.
template <int Rows, int BlocksPerSm>
struct CompactShape {
  static constexpr int rows = Rows, blocks_per_sm = BlocksPerSm;
  static constexpr int tile_items = tile_items_for(rows);
  static constexpr size_t staged_bytes = size_t(tile_items) * sizeof(float);
};
using SmallCompactTiles = CompactShape<8, 4>;
using LargeCompactTiles = CompactShape<12, 3>;
constexpr size_t large_compact_tiles_from = size_t(1) << 26;  // elements
constexpr int split_blocks_per_sm = 3;

// The contract's predicate. NaN compares false, and so do both zeros.
__device__ __forceinline__ u32 is_positive(float x) { return x > 0.f ? 1u : 0u; }

// ---- tile status (as lab 06) -------------------------------------------------------------
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

// ---- warp-level building blocks --------------------------------------------------------

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
// lane l holds elements j * 128 + 4 l .. + 3. Every load is one 512-byte access by the warp.
template <int Rows>
using Slice = u32[Rows][4];

__device__ __forceinline__ size_t element_index(size_t first, int j, int lane, int k) {
  return first + size_t(j) * row_items + 4 * lane + k;
}

// Loads the slice's values as bits; elements past n read as 0.0f, which is not kept.
template <int rows>
__device__ __forceinline__ void load_slice(const float* in, size_t n, size_t first, bool full_tile, int lane,
                                           Slice<rows>& bits) {
  if (full_tile) {
    const float4* source = reinterpret_cast<const float4*>(in + first) + lane;
#pragma unroll
    for (int j = 0; j < rows; ++j) {
      const float4 x = source[j * warp_size];
      bits[j][0] = __float_as_uint(x.x), bits[j][1] = __float_as_uint(x.y);
      bits[j][2] = __float_as_uint(x.z), bits[j][3] = __float_as_uint(x.w);
    }
    return;
  }
#pragma unroll
  for (int j = 0; j < rows; ++j)
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const size_t i = element_index(first, j, lane, k);
      bits[j][k] = i < n ? __float_as_uint(in[i]) : 0u;
    }
}

__device__ __forceinline__ u32 kept(u32 bits) { return is_positive(__uint_as_float(bits)); }

// Counts the slice's kept elements. Only counts per lane and row are kept, not a scan per
// element: registers are what limit the blocks per SM here. Four rows share one shuffle scan: a
// lane's count in a row is at most 4 and a row's total at most 128, so each row's counts fit a
// byte of one word and the bytes never carry into each other. That is a quarter of the
// shuffles and of the registers that one scan per row needs.
constexpr int rows_per_word = 4;
constexpr int row_bits = 8;
constexpr u32 row_mask = (1u << row_bits) - 1;
static_assert(row_items <= int(row_mask), "a row's count of kept elements must fit its byte");

template <int rows>
struct SliceCounts {
  static constexpr int words = (rows + rows_per_word - 1) / rows_per_word;
  u32 before_lane[words];  // row j's byte: kept in row j by the lanes before this one
  u32 row_total[words];    // row j's byte: kept in row j by the whole warp
  u32 slice_total;

  __device__ __forceinline__ u32 byte(const u32 (&packed)[words], int j) const {
    return (packed[j / rows_per_word] >> (row_bits * (j % rows_per_word))) & row_mask;
  }
};

template <int rows>
__device__ __forceinline__ void count_slice(const Slice<rows>& bits, int lane, SliceCounts<rows>& counts) {
  constexpr int words = SliceCounts<rows>::words;
  u32 lane_counts[words] = {};
#pragma unroll
  for (int j = 0; j < rows; ++j) {
    const u32 lane_count = kept(bits[j][0]) + kept(bits[j][1]) + kept(bits[j][2]) + kept(bits[j][3]);
    lane_counts[j / rows_per_word] |= lane_count << (row_bits * (j % rows_per_word));
  }
#pragma unroll
  for (int w = 0; w < words; ++w) {  // independent scans: they overlap
    const u32 inclusive = warp_inclusive_scan(lane_counts[w], lane);
    counts.before_lane[w] = inclusive - lane_counts[w];
    counts.row_total[w] = __shfl_sync(full_mask, inclusive, warp_size - 1);
  }
  counts.slice_total = 0;
#pragma unroll
  for (int j = 0; j < rows; ++j) counts.slice_total += counts.byte(counts.row_total, j);
}

// ---- decoupled look-back (one warp per tile, as lab 06) ---------------------------------

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

// Tickets are handed out in the order blocks start (an atomic counter): that order guarantees
// that the blocks holding earlier tickets are already running, so waiting on them cannot
// deadlock. The block taking the last ticket resets the counter for the next call.
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

// ---- one tile ---------------------------------------------------------------------------

struct SelectArgs {
  const float* in;
  size_t n;
  float* out;
  size_t* count_out;      // compaction: where the last tile writes the count
  u64* split_total;       // split: [counting blocks done : 32 | positives : 32], this call's word
  u64* next_split_total;  // split: the other word, cleared here for the next call
  u32 count_blocks;       // split: tickets 0 .. count_blocks - 1 count, the later ones select
  u32* tile_counter;
  u64* status;
  u32 tile_count;
  u32 epoch;
};

// The tile's outputs are first gathered in shared memory in output order (its kept elements,
// then, in a split, its others), so the writes to global memory are whole, coalesced rows
// rather than scattered stores into every row. Positions here are relative to the tile.
template <bool split, int rows>
__device__ __forceinline__ void stage_slice(float* staged, size_t first, size_t n, int slice_offset, int lane,
                                            u32 kept_before_slice, u32 tile_kept, const Slice<rows>& bits,
                                            const SliceCounts<rows>& counts) {
  u32 kept_before_row = kept_before_slice;  // in the tile, before this row of the slice
#pragma unroll
  for (int j = 0; j < rows; ++j) {
    u32 kept_before = kept_before_row + counts.byte(counts.before_lane, j);
    kept_before_row += counts.byte(counts.row_total, j);
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const u32 position = u32(slice_offset + j * row_items + 4 * lane + k);
      if (kept(bits[j][k]))
        staged[kept_before++] = __uint_as_float(bits[j][k]);
      else if (split && element_index(first, j, lane, k) < n)
        staged[tile_kept + position - kept_before] = __uint_as_float(bits[j][k]);
    }
  }
}

// Loads, counts and stages the tile; returns its aggregate (kept elements). The split
// publishes the aggregate before staging, so that later tiles' look-backs find it sooner
// (measured faster for the split, not for the compaction).
template <bool split, int rows>
__device__ __forceinline__ u32 count_and_stage_tile(const SelectArgs& a, int tile, int lane, int warp, float* staged,
                                                    u32* warp_totals) {
  constexpr int tile_items = tile_items_for(rows), warp_items = rows * row_items;
  const size_t first = size_t(tile) * tile_items + size_t(warp) * warp_items;
  const bool full_tile = (size_t(tile) + 1) * tile_items <= a.n;

  Slice<rows> bits;
  load_slice(a.in, a.n, first, full_tile, lane, bits);
  SliceCounts<rows> counts;
  count_slice(bits, lane, counts);
  if (lane == 0) warp_totals[warp] = counts.slice_total;
  __syncthreads();
  u32 warp_prefix = 0, tile_aggregate = 0;
#pragma unroll
  for (int w = 0; w < block_warps; ++w) {
    if (w == warp) warp_prefix = tile_aggregate;
    tile_aggregate += warp_totals[w];
  }
  if (split && threadIdx.x == 0) publish_aggregate(a.status, tile, tile_aggregate, a.epoch);
  // Staging needs only the tile's own counts, so it overlaps the look-back's wait.
  stage_slice<split>(staged, first, a.n, warp * warp_items, lane, warp_prefix, tile_aggregate, bits, counts);
  return tile_aggregate;
}

// ---- the split's counting blocks and write-out --------------------------------------

// A counting block of the split: a grid-stride read from the back of the input to the front,
// so that the front, where the first select tiles start, is what L2 holds last. One 64-bit
// atomic per block adds its count and 1 to the blocks done, so the total is complete exactly
// when the blocks done reach count_blocks (n <= 2^30: the count never carries into them).
__device__ void count_positive_block(const SelectArgs& a, u32 ticket) {
  __shared__ u32 warp_counts[block_warps];
  const size_t vectors = a.n / 4;
  const size_t stride = size_t(a.count_blocks) * block_threads;
  const float4* in4 = reinterpret_cast<const float4*>(a.in);
  u32 count = 0;
  size_t v = size_t(ticket) * block_threads + threadIdx.x;  // the v-th float4 from the back
  for (; v + 3 * stride < vectors; v += 4 * stride) {       // four independent loads in flight
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
  if (ticket == 0 && threadIdx.x < a.n % 4) count += is_positive(a.in[vectors * 4 + threadIdx.x]);
  // The last call used that word and has finished; no one reads it during this call.
  if (ticket == 0 && threadIdx.x == 0) *a.next_split_total = 0;

  count = warp_sum(count);
  if (threadIdx.x % warp_size == 0) warp_counts[threadIdx.x / warp_size] = count;
  __syncthreads();
  if (threadIdx.x == 0) {
    u32 block_count = 0;
    for (int w = 0; w < block_warps; ++w) block_count += warp_counts[w];
    atomicAdd(a.split_total, (1ull << 32) | block_count);
  }
}

// Spins until every counting block has added its count. They hold earlier tickets than any
// select block, so they are already running and finish without waiting on anyone.
__device__ u32 wait_for_positive_total(const u64* split_total, u32 count_blocks) {
  u64 word;
  do word = load_status(split_total);
  while (u32(word >> 32) != count_blocks);
  return u32(word);
}

// Writes staged[0 .. count) to out[0 .. count) and nothing else: a scalar head up to the first
// 16-byte boundary of out, float4 stores on the body, a scalar tail. Each tile writes two
// ranges that start anywhere, and a float4 store is one instruction for four elements.
__device__ __forceinline__ void write_staged_range(float* out, const float* staged, u32 count) {
  const u32 t = threadIdx.x;
  const u32 misaligned = u32(reinterpret_cast<uintptr_t>(out) / sizeof(float)) % 4;
  const u32 head = min(count, (4u - misaligned) % 4);
  const u32 quads = (count - head) / 4;
  const u32 tail_first = head + 4 * quads;
  if (t < head) out[t] = staged[t];
  if (t < count - tail_first) out[tail_first + t] = staged[tail_first + t];
  float4* body = reinterpret_cast<float4*>(out + head);
  const float* source = staged + head;
#pragma unroll
  for (u32 j = 0; j < items_per_thread / 4; ++j) {
    const u32 q = j * block_threads + t;
    if (q < quads) body[q] = make_float4(source[4 * q], source[4 * q + 1], source[4 * q + 2], source[4 * q + 3]);
  }
}

// ---- the kernels --------------------------------------------------------------------------

// Kept element i goes to out[kept_before_i]: the tile's run, consecutive threads on
// consecutive addresses. The staging area is dynamic shared memory, tile_items_for(rows)
// floats: 48 KiB for the large tile, which is over the static limit.
template <int rows, int blocks_per_sm>
__global__ void __launch_bounds__(block_threads, blocks_per_sm) compact_positive_kernel(SelectArgs a) {
  extern __shared__ float4 staged_storage[];
  float* staged = reinterpret_cast<float*>(staged_storage);
  __shared__ u32 warp_totals[block_warps];
  __shared__ u32 kept_before_tile_shared;
  const int lane = threadIdx.x % warp_size;
  const int warp = threadIdx.x / warp_size;
  const int tile = take_tile(a.tile_counter, a.tile_count);
  const u32 tile_kept = count_and_stage_tile<false, rows>(a, tile, lane, warp, staged, warp_totals);

  if (warp == 0) {
    if (lane == 0) publish_aggregate(a.status, tile, tile_kept, a.epoch);
    const u32 kept_before_tile = look_back(a.status, tile, tile_kept, a.epoch, lane);
    if (lane == 0) {
      kept_before_tile_shared = kept_before_tile;
      if (u32(tile) == a.tile_count - 1) *a.count_out = size_t(kept_before_tile) + tile_kept;
    }
  }
  __syncthreads();
  const u32 kept_before_tile = kept_before_tile_shared;
  for (u32 t = threadIdx.x; t < tile_kept; t += block_threads) a.out[kept_before_tile + t] = staged[t];
}

// One launch: tickets 0 .. count_blocks - 1 count the positives, the later ones each select a
// tile. Kept element i goes to out[kept_before_i], other element i to
// out[positive_total + (i - kept_before_i)]: after every kept one, in input order.
__global__ void __launch_bounds__(block_threads, split_blocks_per_sm) split_positive_kernel(SelectArgs a) {
  __shared__ float staged[tile_items];
  __shared__ u32 kept_before_tile_shared, positive_total_shared;
  __shared__ u32 warp_totals[block_warps];
  const int ticket = take_tile(a.tile_counter, a.count_blocks + a.tile_count);
  if (u32(ticket) < a.count_blocks) {
    count_positive_block(a, u32(ticket));
    return;
  }
  const int lane = threadIdx.x % warp_size;
  const int warp = threadIdx.x / warp_size;
  const int tile = ticket - int(a.count_blocks);
  const u32 tile_kept = count_and_stage_tile<true, slice_rows>(a, tile, lane, warp, staged, warp_totals);

  if (warp == 0) {
    const u32 kept_before_tile = look_back(a.status, tile, tile_kept, a.epoch, lane);
    if (lane == 0) {
      kept_before_tile_shared = kept_before_tile;
      positive_total_shared = wait_for_positive_total(a.split_total, a.count_blocks);
    }
  }
  __syncthreads();
  const u32 kept_before_tile = kept_before_tile_shared;
  const size_t tile_first = size_t(tile) * tile_items;
  const u32 outputs = u32(min(size_t(tile_items), a.n - tile_first));
  const size_t others_first = positive_total_shared + tile_first - kept_before_tile;
  write_staged_range(a.out + kept_before_tile, staged, tile_kept);
  write_staged_range(a.out + others_first, staged + tile_kept, outputs - tile_kept);
}

// ---- host side --------------------------------------------------------------------------

// Kept per device between calls and grown when a call needs more tiles: word 0 holds the
// tile counter, words 1 and 2 the split's totals (calls alternate between them, each clearing
// the other for the next), words 3.. the tile status. Because of it, calls on one device must
// not overlap in time.
struct DeviceScratch {
  u64* words = nullptr;
  size_t tiles = 0;
  u32 epoch = 0;  // 0 is never used, so zeroed words read as "not published"
  u32 split_calls = 0;
  int split_count_blocks = 0;  // counting blocks that fit on the device at once
};
constexpr size_t header_words = 3;

template <class Shape>
constexpr auto compaction_kernel = compact_positive_kernel<Shape::rows, Shape::blocks_per_sm>;

// The large tile's 48 KiB of staging and the kernel's few static words are over the 48 KiB that
// a block may have without asking; the attribute is per device.
bool allow_large_staging() {
  return cudaFuncSetAttribute(compaction_kernel<LargeCompactTiles>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                              int(LargeCompactTiles::staged_bytes)) == cudaSuccess;
}

// As many counting blocks as can be resident together, so that all of them start before the
// first select block and read while the select tiles are still waiting for tickets.
int resident_split_blocks(int device) {
  int sms = 0, per_sm = 0;
  if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) return 0;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, split_positive_kernel, block_threads, 0) != cudaSuccess)
    return 0;
  return sms * std::max(per_sm, 1);
}

DeviceScratch* scratch_for(size_t tile_count, cudaStream_t stream) {
  constexpr int max_devices = 64;
  static DeviceScratch scratch[max_devices];
  static std::mutex mutex;
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || device >= max_devices) return nullptr;
  std::lock_guard<std::mutex> lock(mutex);
  DeviceScratch& mine = scratch[device];
  if (mine.split_count_blocks == 0) {  // the device's first call
    if (!allow_large_staging()) return nullptr;
    mine.split_count_blocks = resident_split_blocks(device);
    if (mine.split_count_blocks == 0) return nullptr;
  }
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

// At most 2^17 (n <= 2^30, tiles of at least 8192).
size_t tiles_for(size_t n, int tile_items) { return (n + tile_items - 1) / tile_items; }

SelectArgs select_args(const float* in, size_t n, float* out, int tile_items, const DeviceScratch& scratch) {
  SelectArgs a{};
  a.in = in;
  a.n = n;
  a.out = out;
  a.tile_counter = reinterpret_cast<u32*>(scratch.words);
  a.status = scratch.words + header_words;
  a.tile_count = u32(tiles_for(n, tile_items));
  a.epoch = scratch.epoch;
  return a;
}

// At least four float4 loads per counting thread: fewer blocks for a small input.
u32 split_count_blocks(size_t n, const DeviceScratch& scratch) {
  const size_t loads_per_block = size_t(block_threads) * 4;
  const size_t wanted = (n / 4 + loads_per_block - 1) / loads_per_block;
  return u32(std::max<size_t>(1, std::min<size_t>(wanted, size_t(scratch.split_count_blocks))));
}

template <class Shape>
void compact_with(const float* d_in, size_t n, float* d_out, size_t* d_count, cudaStream_t stream) {
  DeviceScratch* scratch = scratch_for(tiles_for(n, Shape::tile_items), stream);
  if (scratch == nullptr) return;  // the CUDA error stays visible to the caller
  SelectArgs a = select_args(d_in, n, d_out, Shape::tile_items, *scratch);
  a.count_out = d_count;
  compaction_kernel<Shape><<<a.tile_count, block_threads, Shape::staged_bytes, stream>>>(a);
}

}  // namespace

extern "C" void compact_positive(const float* d_in, size_t n, float* d_out, size_t* d_count, cudaStream_t stream) {
  if (n == 0) {
    cudaMemsetAsync(d_count, 0, sizeof(size_t), stream);
    return;
  }
  if (n < large_compact_tiles_from)
    compact_with<SmallCompactTiles>(d_in, n, d_out, d_count, stream);
  else
    compact_with<LargeCompactTiles>(d_in, n, d_out, d_count, stream);
}

extern "C" void split_positive(const float* d_in, size_t n, float* d_out, cudaStream_t stream) {
  if (n == 0) return;
  DeviceScratch* scratch = scratch_for(tiles_for(n, tile_items), stream);
  if (scratch == nullptr) return;
  SelectArgs a = select_args(d_in, n, d_out, tile_items, *scratch);
  const u32 parity = scratch->split_calls++ % 2;
  a.split_total = scratch->words + 1 + parity;
  a.next_split_total = scratch->words + 1 + (parity ^ 1);
  a.count_blocks = split_count_blocks(n, *scratch);
  split_positive_kernel<<<a.count_blocks + a.tile_count, block_threads, 0, stream>>>(a);
}
