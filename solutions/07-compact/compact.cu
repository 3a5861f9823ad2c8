// Lab 07 reference: stream compaction and split in one pass over the input, with the
// decoupled look-back of lab 06 (Merrill and Garland, 2016) carrying counts instead of sums,
// the method behind cub::DeviceSelect, written out without CUB.
//
// Each block takes the next tile of 8192 elements (256 threads x 8 float4 loads) and counts
// the kept ones as integers: in registers within a thread, warp shuffles across lanes, a small
// shared array across warps. The tile's number of kept elements is its aggregate; the
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
// - The compaction kernel asks for 4 blocks of 256 per SM (__launch_bounds__(256, 4): at most
//   64 registers). Left to the compiler, the same kernel can take 72 registers (3 blocks per
//   SM) and runs slower, so the occupancy should not rest on the compiler's choice.
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

// One block shape for both kernels: 256 threads of 8 float4 loads, the fastest of a sweep of
// 128-512 threads x 2-8 loads for each (docs/design/07-compact.md).
constexpr int block_threads = 256;
constexpr int block_warps = block_threads / warp_size;
constexpr int slice_rows = 8;                                   // float4 loads per thread
constexpr int warp_items = slice_rows * row_items;              // a warp's slice of the tile
constexpr int tile_items = block_warps * warp_items;            // 8192
constexpr int items_per_thread = tile_items / block_threads;    // 32
// Blocks per SM that __launch_bounds__ asks for: it caps the registers at 64 (compaction) and
// 80 (split), which is what the kernels need without spilling.
constexpr int compact_blocks_per_sm = 4;
constexpr int split_blocks_per_sm = 3;
static_assert(tile_items == 8192, "the tile the measurements were made with");

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

// Counts the slice's kept elements: for each row, how many come before the lane's first
// element of that row (in the whole slice), and the slice's total. Only counts per lane and
// row are kept, not a scan per element: registers are what limit the blocks per SM here.
// The rows' shuffle scans do not depend on each other, so they overlap.
template <int rows>
__device__ __forceinline__ u32 count_slice(const Slice<rows>& bits, int lane, u32 (&kept_before_lane)[rows]) {
  u32 lane_count[rows], row_inclusive[rows];
#pragma unroll
  for (int j = 0; j < rows; ++j) {
    lane_count[j] = kept(bits[j][0]) + kept(bits[j][1]) + kept(bits[j][2]) + kept(bits[j][3]);
    row_inclusive[j] = warp_inclusive_scan(lane_count[j], lane);
  }
  u32 carry = 0;  // kept elements in the slice's earlier rows
#pragma unroll
  for (int j = 0; j < rows; ++j) {
    kept_before_lane[j] = carry + row_inclusive[j] - lane_count[j];
    carry += __shfl_sync(full_mask, row_inclusive[j], warp_size - 1);
  }
  return carry;
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
                                            const u32 (&kept_before_lane)[rows]) {
#pragma unroll
  for (int j = 0; j < rows; ++j) {
    u32 kept_before = kept_before_slice + kept_before_lane[j];
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
template <bool split>
__device__ __forceinline__ u32 count_and_stage_tile(const SelectArgs& a, int tile, int lane, int warp, float* staged,
                                                    u32* warp_totals) {
  const size_t first = size_t(tile) * tile_items + size_t(warp) * warp_items;
  const bool full_tile = (size_t(tile) + 1) * tile_items <= a.n;

  Slice<slice_rows> bits;
  load_slice(a.in, a.n, first, full_tile, lane, bits);
  u32 kept_before_lane[slice_rows];
  const u32 warp_total = count_slice(bits, lane, kept_before_lane);
  if (lane == 0) warp_totals[warp] = warp_total;
  __syncthreads();
  u32 warp_prefix = 0, tile_aggregate = 0;
#pragma unroll
  for (int w = 0; w < block_warps; ++w) {
    if (w == warp) warp_prefix = tile_aggregate;
    tile_aggregate += warp_totals[w];
  }
  if (split && threadIdx.x == 0) publish_aggregate(a.status, tile, tile_aggregate, a.epoch);
  // Staging needs only the tile's own counts, so it overlaps the look-back's wait.
  stage_slice<split>(staged, first, a.n, warp * warp_items, lane, warp_prefix, tile_aggregate, bits,
                     kept_before_lane);
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

}  // namespace

// ---- the kernels --------------------------------------------------------------------------
// They have external linkage, in a namespace of their own, for a reason outside the source:
// from the same PTX, ptxas (CUDA 13.0, sm_90) spills 4 bytes of the compaction kernel at its
// 64-register bound when the kernel is internal (the anonymous namespace) and none when it is
// visible, as it was in the experiment that measured it.
namespace lab07_reference {

// Kept element i goes to out[kept_before_i]: the tile's run, consecutive threads on
// consecutive addresses.
__global__ void __launch_bounds__(block_threads, compact_blocks_per_sm) compact_positive_kernel(SelectArgs a) {
  __shared__ float staged[tile_items];
  __shared__ u32 warp_totals[block_warps];
  __shared__ u32 kept_before_tile_shared;
  const int lane = threadIdx.x % warp_size;
  const int warp = threadIdx.x / warp_size;
  const int tile = take_tile(a.tile_counter, a.tile_count);
  const u32 tile_kept = count_and_stage_tile<false>(a, tile, lane, warp, staged, warp_totals);

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
  const u32 tile_kept = count_and_stage_tile<true>(a, tile, lane, warp, staged, warp_totals);

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

}  // namespace lab07_reference

namespace {

using lab07_reference::compact_positive_kernel;
using lab07_reference::split_positive_kernel;

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
  if (mine.split_count_blocks == 0) {
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

size_t tiles_for(size_t n) { return (n + tile_items - 1) / tile_items; }  // at most 2^17

SelectArgs select_args(const float* in, size_t n, float* out, const DeviceScratch& scratch) {
  SelectArgs a{};
  a.in = in;
  a.n = n;
  a.out = out;
  a.tile_counter = reinterpret_cast<u32*>(scratch.words);
  a.status = scratch.words + header_words;
  a.tile_count = u32(tiles_for(n));
  a.epoch = scratch.epoch;
  return a;
}

// At least four float4 loads per counting thread: fewer blocks for a small input.
u32 split_count_blocks(size_t n, const DeviceScratch& scratch) {
  const size_t loads_per_block = size_t(block_threads) * 4;
  const size_t wanted = (n / 4 + loads_per_block - 1) / loads_per_block;
  return u32(std::max<size_t>(1, std::min<size_t>(wanted, size_t(scratch.split_count_blocks))));
}

}  // namespace

extern "C" void compact_positive(const float* d_in, size_t n, float* d_out, size_t* d_count, cudaStream_t stream) {
  if (n == 0) {
    cudaMemsetAsync(d_count, 0, sizeof(size_t), stream);
    return;
  }
  DeviceScratch* scratch = scratch_for(tiles_for(n), stream);
  if (scratch == nullptr) return;  // the CUDA error stays visible to the caller
  SelectArgs a = select_args(d_in, n, d_out, *scratch);
  a.count_out = d_count;
  compact_positive_kernel<<<a.tile_count, block_threads, 0, stream>>>(a);
}

extern "C" void split_positive(const float* d_in, size_t n, float* d_out, cudaStream_t stream) {
  if (n == 0) return;
  DeviceScratch* scratch = scratch_for(tiles_for(n), stream);
  if (scratch == nullptr) return;
  SelectArgs a = select_args(d_in, n, d_out, *scratch);
  const u32 parity = scratch->split_calls++ % 2;
  a.split_total = scratch->words + 1 + parity;
  a.next_split_total = scratch->words + 1 + (parity ^ 1);
  a.count_blocks = split_count_blocks(n, *scratch);
  split_positive_kernel<<<a.count_blocks + a.tile_count, block_threads, 0, stream>>>(a);
}
