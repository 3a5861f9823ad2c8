// Lab 03 reference solution: radix select that reads the input once, in one cooperative
// kernel, with the bound for the prefilter found while the read is under way.
//
// Beyond the chapter (sorted arrays per thread: O(k) work per element, k capped by shared
// memory) it finds the k-th largest value digit by digit, as a radix sort would sort, but
// keeps only the one bucket that holds it. Beyond the README's outline it avoids every pass
// over the input but one, and every stop that leaves the memory system idle:
//  1. Each block loads its sample (16-byte loads): its first tile when k is small, its first
//     two tiles for larger k, so that the sample's top bin still holds k values. It
//     histograms the top 11 bits in shared memory, parks the tiles there, and adds to a
//     global histogram only the bins at or above its own r-th largest (r a few times k over
//     the quorum: the global k-th largest lies higher). Once a quorum of the blocks (half for
//     the one-tile sample, three quarters for two) have added their bins (an arrival counter,
//     an acq_rel atomic rather than a sequentially consistent fence), the block that completes
//     it draws the bin that holds the k-th largest of the sample tiles counted, a lower bound
//     for the k-th largest of the input (they are a subset of it: always right), and
//     publishes it in one word; the others spin on that word while their next tiles load,
//     none on the stragglers.
//  2. The rest of the read keeps only the values in or above that bin (on uniform input one
//     top bin's share, n / 2048: about 4,900 values at 10^7), with one vote per warp and tile.
//     Each block stages its survivors in shared memory and counts them there in 2048 fine
//     bins spread from the bound to the top of the sample's highest bin; at the end of its
//     read it copies them to the prefilter buffer with one global atomic for its slots and
//     adds its fine bins to the global ones. A block with many survivors (large n) first drops
//     those below its own k-th largest and below the k-th largest of what the blocks before it
//     sent, both lower bounds for the input's: the last block then gathers from thousands of
//     values, not n / 2048. A global atomic per warp and tile with survivors, all on one
//     counter, queues at that one address (at 2^28 that queue cost more than the gap to the
//     read-only kernel that is left: docs/design/03-top-k.md).
//  3. The last block to finish the read (an arrival counter, no grid barrier) scans the fine
//     bins for the one that holds the k-th largest. When that bin and those above it hold at
//     most 4096 keys (k and a few more), it gathers them from the prefilter straight into
//     their bins' places in descending order (a counting sort: the bins' counts give the
//     places), sorts each bin's few keys by insertion (a warp each for bins of up to 128
//     keys) and writes the first k; the other blocks leave. More crowded bins take a bitonic
//     sort of all of them instead. Else, when the prefilter fits shared memory, it narrows
//     the prefilter through the three digits (11, 11, 10 bits) by shared-memory histograms.
//     Otherwise (k > 4096; ties that overflow the buffer) it calls every block to all-block
//     passes over the prefilter, or over the input after an overflow, with grid barriers.
// Inputs that fit on chip (7.0 to 10.3 million values on 132 SMs, k up to a quarter of the
// quorum's pool) take a second kernel, held_select_kernel below: one block of 1024 threads an
// SM holds its whole share in shared memory and registers, so no block stops reading to wait
// for the bound, and the values are kept from shared memory once it is known.
// Why this beats a design that reads a sample first and waits at a grid barrier before the
// full read: no sample pass and no barrier before the read, and the prefilter's bound comes
// from data the read fetches anyway. A register-resident bitonic sort of the winners (8 keys
// per thread, shuffles) measured slower, so it is not used. The times, where each call's
// microseconds go, and a sampled-threshold design that lost: docs/design/03-top-k.md.
#include "topk.h"

#include <cooperative_groups.h>
#include <cuda_pipeline.h>
#include <cuda/atomic>
#include <cub/block/block_scan.cuh>
#include <cub/device/device_radix_sort.cuh>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <mutex>

namespace {

namespace cg = cooperative_groups;

struct TopkTuning {
  static constexpr int threads_per_block = 512;
  static constexpr int blocks_per_sm = 2;
  static constexpr int vectors_per_thread = 4;       // 16-byte loads per thread per tile
  static constexpr int items_per_thread = 8;         // scalar loads in flight (all-block passes)
  static constexpr int block_sort_capacity = 4096;   // larger k: cub::DeviceRadixSort
  static constexpr int shared_finish_capacity = 12288;  // prefilter sizes one block narrows alone
  // The bound is drawn from each block's first tile (small k) or first two tiles, once this
  // share of the blocks have counted theirs.
  static constexpr int narrow_sample_quorum_percent = 50;
  static constexpr int wide_sample_quorum_percent = 75;
  // A block with this many survivors or more sends only those that can still be in the top k
  // (about 500 a block at 2^28 on uniform input, 19 at 10^7, where the two scans that decide it
  // would only add to the last block's time).
  static constexpr uint32_t survivors_worth_cutting = 64;
};

constexpr int threads = TopkTuning::threads_per_block;
constexpr int vectors_per_thread = TopkTuning::vectors_per_thread;
constexpr int items_per_thread = TopkTuning::items_per_thread;
constexpr size_t tile_vectors = size_t(threads) * vectors_per_thread;
constexpr int bin_count = 2048;  // 11-bit digits: 11 + 11 + 10 bits make the 32-bit key
constexpr int digit_count = 3;
static_assert(bin_count % threads == 0, "each thread scans whole groups of bins when selecting");
// The last block's finish: the prefilter's keys, then the results to sort.
constexpr size_t finish_shared_bytes =
    size_t(TopkTuning::shared_finish_capacity + TopkTuning::block_sort_capacity) * sizeof(uint32_t);
static_assert(finish_shared_bytes >= 2 * tile_vectors * sizeof(int4), "the read parks two tiles in the same memory");
// Each block's survivors wait in shared memory until its read ends (past this, they go
// straight to the prefilter).
constexpr uint32_t staging_capacity = 4096;
constexpr size_t dynamic_shared_bytes = finish_shared_bytes + staging_capacity * sizeof(int32_t);

// Keys compare as unsigned integers in the same order as the int32 values: flipping the sign
// bit moves INT_MIN to 0 and INT_MAX to 0xFFFFFFFF.
__host__ __device__ constexpr uint32_t to_key(int32_t value) { return uint32_t(value) ^ 0x80000000u; }
__host__ __device__ constexpr int32_t to_value(uint32_t key) { return int32_t(key ^ 0x80000000u); }

__host__ __device__ constexpr int digit_shift(int digit) { return digit == 0 ? 21 : digit == 1 ? 10 : 0; }
// The key bits that digits 0..digit decide.
__host__ __device__ constexpr uint32_t decided_mask(int digit) { return digit < 0 ? 0u : ~0u << digit_shift(digit); }
__device__ __forceinline__ uint32_t digit_of(uint32_t key, int digit) {
  return (key >> digit_shift(digit)) & (digit == 2 ? 0x3FFu : 0x7FFu);
}

// What the blocks share, in device memory. The bound's histogram and counters come in two
// copies, one per call parity: a call uses one and zeroes the other for the next call (the
// previous call, on the same stream, is over), so no barrier is needed before the bound.
// The rest is zeroed at the start of each call, before the first grid barrier that uses it.
struct SelectState {
  uint32_t bound_histogram[2][bin_count];  // digit 0 of the blocks' sample tiles, top bins only
  uint32_t fine_histogram[2][bin_count];   // the values at or above the bound, in fine bins
  uint32_t bound_arrivals[2];              // blocks that have added their sample tiles
  unsigned long long published_bound[2];   // the bound and its fine shift, once drawn (0 until then)
  uint32_t prefilter_count[2];             // values the read wanted to copy (over capacity: overflow)
  uint32_t read_arrivals[2];               // blocks done with the read
  uint32_t finish_plan[2];                 // set by the last of them: 1 it finishes alone, 2 all blocks
  uint32_t histogram[digit_count][bin_count];  // all-block passes
  uint32_t candidate_count[2];
  uint32_t winner_count;  // values known to be in the top k, written to `unsorted`
};

struct Buffers {
  int32_t* prefiltered;
  int32_t* candidates[2];
  uint32_t capacity;  // of each buffer; a larger bucket is re-read from the input
  int32_t* unsorted;  // the k results, before the final sort (all-block path)
};

// The input as an aligned body of 16-byte vectors and the at most 3 + 3 values around it.
// The body is cut into tiles of tile_vectors, and each block reads a run of consecutive tiles.
struct InputView {
  const int4* body;
  uint32_t body_vectors;  // n < 2^32, so fewer than 2^30
  uint32_t tiles_per_block;
  size_t head;        // values before the body
  size_t tail_begin;  // index of the first value after the body
};

__device__ InputView split_input(const int32_t* in, size_t n) {
  const size_t misaligned = (reinterpret_cast<uintptr_t>(in) / sizeof(int32_t)) % 4;
  const size_t head = misaligned == 0 ? 0 : (4 - misaligned < n ? 4 - misaligned : n);
  const size_t body_vectors = (n - head) / 4;
  const size_t tiles = (body_vectors + tile_vectors - 1) / tile_vectors;
  return {reinterpret_cast<const int4*>(in + head), uint32_t(body_vectors),
          uint32_t((tiles + gridDim.x - 1) / gridDim.x), head, head + body_vectors * 4};
}

// Blocks with no work skip the loop, so small candidate sets cost a few blocks, not a grid.
__device__ __forceinline__ unsigned active_blocks(size_t count) {
  const size_t per_block = size_t(threads) * items_per_thread;
  const size_t wanted = (count + per_block - 1) / per_block;
  return unsigned(wanted < 1 ? 1 : wanted < gridDim.x ? wanted : gridDim.x);
}

// Calls visit(key, valid) on every value of src[0..count), the whole warp together (so the
// visitor may use warp votes), with several loads in flight per thread: 16-byte loads when
// src is aligned for them. Loads bypass L1: other blocks wrote the buffers this kernel reads.
template <class Visit>
__device__ __forceinline__ void for_each_key(const int32_t* src, size_t count, unsigned blocks, Visit visit) {
  if (blockIdx.x >= blocks) return;
  const unsigned lane = threadIdx.x % 32;
  const size_t stride = size_t(blocks) * threads;
  size_t warp_base = size_t(blockIdx.x) * threads + (threadIdx.x - lane);
  if (reinterpret_cast<uintptr_t>(src) % sizeof(int4) == 0) {
    const int4* vectors = reinterpret_cast<const int4*>(src);
    const size_t vector_count = count / 4;
    for (; warp_base + 31 + (vectors_per_thread - 1) * stride < vector_count;
         warp_base += vectors_per_thread * stride) {
      int4 v[vectors_per_thread];
#pragma unroll
      for (int u = 0; u < vectors_per_thread; ++u) v[u] = __ldcg(&vectors[warp_base + lane + u * stride]);
#pragma unroll
      for (int u = 0; u < vectors_per_thread; ++u) {
        visit(to_key(v[u].x), true);
        visit(to_key(v[u].y), true);
        visit(to_key(v[u].z), true);
        visit(to_key(v[u].w), true);
      }
    }
    for (; warp_base < vector_count; warp_base += stride) {
      const size_t i = warp_base + lane;
      const bool valid = i < vector_count;
      const int4 v = valid ? __ldcg(&vectors[i]) : make_int4(0, 0, 0, 0);
      visit(to_key(v.x), valid);
      visit(to_key(v.y), valid);
      visit(to_key(v.z), valid);
      visit(to_key(v.w), valid);
    }
    // The last count % 4 values: the first warp of the first block.
    if (blockIdx.x == 0 && threadIdx.x < 32 && vector_count * 4 < count) {
      const size_t i = vector_count * 4 + lane;
      const bool valid = i < count;
      visit(valid ? to_key(__ldcg(&src[i])) : 0u, valid);
    }
    return;
  }
  for (; warp_base + 31 + (items_per_thread - 1) * stride < count; warp_base += items_per_thread * stride) {
    int32_t values[items_per_thread];
#pragma unroll
    for (int u = 0; u < items_per_thread; ++u) values[u] = __ldcg(&src[warp_base + lane + u * stride]);
#pragma unroll
    for (int u = 0; u < items_per_thread; ++u) visit(to_key(values[u]), true);
  }
  for (; warp_base < count; warp_base += stride) {
    const size_t i = warp_base + lane;
    const bool valid = i < count;
    visit(valid ? to_key(__ldcg(&src[i])) : 0u, valid);
  }
}

// Reserves `wanted` consecutive slots for each lane with one atomic per warp (all values may
// land in one bucket); returns the lane's first slot. The whole warp must call it. A 64-bit
// counter counts in its low half.
template <class Counter>
__device__ __forceinline__ uint32_t warp_reserve(uint32_t wanted, Counter* counter) {
  const unsigned lane = threadIdx.x % 32;
  uint32_t inclusive = wanted;
#pragma unroll
  for (int offset = 1; offset < 32; offset *= 2) {
    const uint32_t below = __shfl_up_sync(0xFFFFFFFFu, inclusive, offset);
    if (int(lane) >= offset) inclusive += below;
  }
  const uint32_t total = __shfl_sync(0xFFFFFFFFu, inclusive, 31);
  if (total == 0) return 0;
  Counter base = 0;
  if (lane == 31) base = atomicAdd(counter, Counter(total));
  return uint32_t(__shfl_sync(0xFFFFFFFFu, base, 31)) + inclusive - wanted;
}

// One slot for each lane that has `take` set. The whole warp must call it.
__device__ __forceinline__ uint32_t warp_append_slot(bool take, uint32_t* counter) {
  const unsigned lane = threadIdx.x % 32;
  const unsigned takers = __ballot_sync(0xFFFFFFFFu, take);
  if (takers == 0) return 0;
  const int leader = __ffs(takers) - 1;
  uint32_t base = 0;
  if (int(lane) == leader) base = atomicAdd(counter, uint32_t(__popc(takers)));
  base = __shfl_sync(0xFFFFFFFFu, base, leader);
  return base + __popc(takers & ((1u << lane) - 1));
}

// One block counts itself in after a barrier: the release publishes what the whole block wrote
// before it, the acquire lets the block read what the blocks counted before it wrote. Returns
// the count before. An acq_rel atomic: lighter than __threadfence's sequentially consistent
// fence on either side.
__device__ __forceinline__ uint32_t count_in(uint32_t* arrivals) {
  return cuda::atomic_ref<uint32_t, cuda::thread_scope_device>(*arrivals).fetch_add(1u, cuda::memory_order_acq_rel);
}

__device__ void zero_histogram(uint32_t* histogram) {
  for (int bin = threadIdx.x; bin < bin_count; bin += threads) histogram[bin] = 0;
}

// Adds the block's bins from `lowest_bin` up to the shared histogram (a zero bin costs no atomic).
__device__ void flush_histogram(const uint32_t* block_histogram, uint32_t* histogram, uint32_t lowest_bin = 0) {
  for (uint32_t bin = lowest_bin + threadIdx.x; bin < bin_count; bin += threads)
    if (block_histogram[bin] != 0) atomicAdd(&histogram[bin], block_histogram[bin]);
}

struct BucketChoice {
  uint32_t bin;
  uint32_t above;  // keys in higher bins
  uint32_t count;  // keys in the bin
  bool found;      // false when the histogram holds fewer than rank keys (then bin 0)
};

// The bin that holds the rank-th largest key of `histogram` (in global memory, written by
// other blocks, or in this block's shared memory), scanning from the top bin. Block-wide;
// every thread gets the answer.
// Optionally also *top, the highest bin that holds a key (a shared word the caller zeroed
// before a barrier), and starts[bin], the keys in higher bins: the bin's first place in
// descending order. For blocks of block_threads; the held kernel's blocks take the warp-scan
// algorithm, whose shared memory fits beside the input they hold.
template <int block_threads = threads, cub::BlockScanAlgorithm algorithm = cub::BLOCK_SCAN_RAKING>
__device__ BucketChoice find_bucket(const uint32_t* histogram, uint32_t rank, bool in_global, uint32_t* top = nullptr,
                                    uint32_t* starts = nullptr) {
  using BlockScan = cub::BlockScan<uint32_t, block_threads, algorithm>;
  __shared__ typename BlockScan::TempStorage scan_storage;
  __shared__ BucketChoice choice;
  constexpr int bins_per_thread = bin_count / block_threads;
  uint32_t counts[bins_per_thread];
  uint32_t thread_total = 0;
#pragma unroll
  for (int j = 0; j < bins_per_thread; ++j) {
    const uint32_t bin = bin_count - 1 - (threadIdx.x * bins_per_thread + j);
    counts[j] = in_global ? __ldcg(&histogram[bin]) : histogram[bin];
    thread_total += counts[j];
    if (top != nullptr && counts[j] != 0) atomicMax(top, bin);
  }
  uint32_t above = 0, total = 0;
  BlockScan(scan_storage).ExclusiveSum(thread_total, above, total);
  if (total < rank) {  // block-uniform: every thread sees the same total
    __syncthreads();     // before the next call reuses scan_storage
    return {0, 0, 0, false};
  }
#pragma unroll
  for (int j = 0; j < bins_per_thread; ++j) {
    const uint32_t bin = bin_count - 1 - (threadIdx.x * bins_per_thread + j);
    if (above < rank && above + counts[j] >= rank) choice = {bin, above, counts[j], true};  // exactly one thread
    if (starts != nullptr) starts[bin] = above;
    above += counts[j];
  }
  __syncthreads();
  return choice;
}

// Sorts keys[0..count) (shared memory, count <= block_sort_capacity) largest first and writes
// the first k to out, with a bitonic network over the next power of two. A warp's pairs at
// gaps up to 32 stay inside its own 64-key windows, so consecutive such steps need only a warp
// barrier: 10 of the 55 steps for 1000 keys wait for the whole block.
__device__ void block_sort_descending(int32_t* keys, uint32_t count, uint32_t k, int32_t* out) {
  uint32_t size = 1;
  while (size < count) size *= 2;
  for (uint32_t i = count + threadIdx.x; i < size; i += threads) keys[i] = INT_MIN;
  __syncthreads();
  for (uint32_t run = 2; run <= size; run *= 2) {
    for (uint32_t gap = run / 2; gap > 0; gap /= 2) {
      // A block barrier when this step or the one before (gap * 2) crosses windows.
      if (gap >= 64 || (gap == 32 && run >= 128))
        __syncthreads();
      else
        __syncwarp();
      for (uint32_t pair = threadIdx.x; pair < size / 2; pair += threads) {
        const uint32_t lo = 2 * pair - (pair & (gap - 1));
        const bool descending = (lo & run) == 0;  // the final run (run == size) is descending
        const int32_t a = keys[lo], b = keys[lo + gap];
        if (descending ? a < b : a > b) {
          keys[lo] = b;
          keys[lo + gap] = a;
        }
      }
    }
  }
  __syncthreads();
  for (uint32_t i = threadIdx.x; i < k; i += threads) out[i] = keys[i];
}

// ---- The read: tiles of 16-byte vectors, the bound, the prefilter ----

// A tile is tile_vectors consecutive vectors (32 KiB); thread i loads vectors i, i + threads,
// ... (a warp reads 512 bytes at once). Each block's first tile opens its run, so the first
// tiles that the bound is drawn from are spread evenly over the input (sorted input too).
struct Tile {
  int4 vectors[vectors_per_thread];
  uint32_t first;  // this thread's first vector index
};

// The bound below which no value can be in the top k, and the fine bins that the keys at or
// above it are counted in: bin (key - bound key) >> fine_shift, the last bin also taking the
// keys past it.
struct Bound {
  uint32_t key;
  uint32_t fine_shift;
};

__device__ __forceinline__ uint32_t fine_bin(uint32_t key, const Bound& bound) {
  const uint32_t bin = (key - bound.key) >> bound.fine_shift;
  return bin < bin_count ? bin : bin_count - 1;
}

// The block's tile t, as an index into the body's tiles, or ~0 when the block has no tile t.
__device__ __forceinline__ uint32_t block_tile(const InputView& input, unsigned t) {
  const size_t tile = size_t(blockIdx.x) * input.tiles_per_block + t;  // 64-bit: may pass 2^32 vectors
  return t < input.tiles_per_block && tile * tile_vectors < input.body_vectors ? uint32_t(tile) : ~0u;
}

// This thread's first vector of the tile (past the body when there is no tile).
__device__ __forceinline__ uint32_t first_vector(const InputView& input, uint32_t tile) {
  return tile != ~0u ? tile * uint32_t(tile_vectors) + threadIdx.x : input.body_vectors;
}

__device__ __forceinline__ Tile load_tile(const InputView& input, uint32_t tile) {
  Tile loaded;
  loaded.first = first_vector(input, tile);
#pragma unroll
  for (int u = 0; u < vectors_per_thread; ++u) {
    const uint32_t i = loaded.first + u * threads;
    loaded.vectors[u] = i < input.body_vectors ? __ldcs(&input.body[i]) : make_int4(0, 0, 0, 0);  // read once
  }
  return loaded;
}

__device__ __forceinline__ bool holds(const Tile& tile, int u, const InputView& input) {
  return tile.first + u * threads < input.body_vectors;
}

__device__ __forceinline__ uint32_t key_at(const Tile& tile, int u, int c) {
  const int4 v = tile.vectors[u];
  return to_key(c == 0 ? v.x : c == 1 ? v.y : c == 2 ? v.z : v.w);
}

__device__ void histogram_tile(const Tile& tile, const InputView& input, uint32_t* histogram) {
#pragma unroll
  for (int u = 0; u < vectors_per_thread; ++u)
    if (holds(tile, u, input))
#pragma unroll
      for (int c = 0; c < 4; ++c) atomicAdd(&histogram[digit_of(key_at(tile, u, c), 0)], 1u);
}

// The block's survivors and their fine bins, in shared memory until its read ends: one
// global atomic per block for the prefilter's slots instead of one per warp and tile.
struct Stage {
  uint32_t* count;            // survivors staged (past staging_capacity, the rest went straight out)
  int32_t* values;            // staging_capacity of them
  uint32_t* fine_bins;        // bin_count
  uint32_t* prefilter_count;  // the global count
  int32_t* sending;           // staging_capacity: the survivors a block sends when it cuts them
};

// Stages the tile's keys at or above the bound and counts them in the block's fine bins: one
// vote per warp when none is (the usual case), else one shared atomic per warp for the slots.
// Keys past the stage's capacity go straight to the prefilter; past its capacity only the
// count grows.
__device__ void prefilter_tile(const Tile& tile, const InputView& input, const Bound& bound, const Buffers& buffers,
                               const Stage& stage) {
  uint32_t keep = 0;  // bit 4u + c: component c of vector u
#pragma unroll
  for (int u = 0; u < vectors_per_thread; ++u)
#pragma unroll
    for (int c = 0; c < 4; ++c)
      if (holds(tile, u, input) && key_at(tile, u, c) >= bound.key) keep |= 1u << (4 * u + c);
  if (!__any_sync(0xFFFFFFFFu, keep != 0)) return;
  const uint32_t wanted = __popc(keep);
  uint32_t slot = warp_reserve(wanted, stage.count);
  const uint32_t fits = slot >= staging_capacity ? 0 : min(wanted, staging_capacity - slot);
  uint32_t direct = 0;
  if (__any_sync(0xFFFFFFFFu, fits < wanted)) direct = warp_reserve(wanted - fits, stage.prefilter_count);
#pragma unroll
  for (int u = 0; u < vectors_per_thread; ++u)
#pragma unroll
    for (int c = 0; c < 4; ++c)
      if (keep & (1u << (4 * u + c))) {
        const uint32_t key = key_at(tile, u, c);
        atomicAdd(&stage.fine_bins[fine_bin(key, bound)], 1u);
        if (slot < staging_capacity) {
          stage.values[slot] = to_value(key);
        } else {
          if (direct < buffers.capacity) buffers.prefiltered[direct] = to_value(key);
          ++direct;
        }
        ++slot;
      }
}

// The fine bin below which none of the block's staged survivors can be in the top k, by two
// lower bounds on the input's k-th largest: the block's own k-th largest, and the k-th largest
// of what the blocks before it have sent (a subset of the input: the shared fine bins count it,
// whatever part of it has landed). 0 sends them all: when the block has few survivors, or when
// some went straight to the prefilter (sent already, and counted in its fine bins). Block-wide.
__device__ uint32_t lowest_bin_to_send(const Stage& stage, uint32_t k, const uint32_t* fine_histogram) {
  const uint32_t survivors = *stage.count;
  if (survivors < TopkTuning::survivors_worth_cutting || survivors > staging_capacity) return 0;
  const uint32_t own = find_bucket(stage.fine_bins, k, false).bin;  // bin 0 when the block has fewer than k
  const uint32_t sent_before = find_bucket(fine_histogram, k, true).bin;
  return max(own, sent_before);
}

// Copies the staged survivors at or above lowest_key to stage.sending; returns how many.
__device__ uint32_t compact_stage(const Stage& stage, uint32_t lowest_key) {
  __shared__ uint32_t sent;
  if (threadIdx.x == 0) sent = 0;
  __syncthreads();
  const unsigned lane = threadIdx.x % 32;
  for (uint32_t warp_base = threadIdx.x - lane; warp_base < *stage.count; warp_base += threads) {
    const uint32_t i = warp_base + lane;
    const int32_t value = i < *stage.count ? stage.values[i] : 0;
    const bool send = i < *stage.count && to_key(value) >= lowest_key;
    const uint32_t slot = warp_append_slot(send, &sent);
    if (send) stage.sending[slot] = value;
  }
  __syncthreads();
  return sent;
}

// A block's `count` staged values to `out`, from the place that one atomic adding `reserved` (at
// least count) to `counter` gives the block; past `capacity` they are only counted.
template <class Value, class Counter>
__device__ void copy_to_reserved_place(const Value* staged, uint32_t count, unsigned long long reserved,
                                       Counter* counter, Value* out, uint32_t capacity) {
  __shared__ uint32_t base;
  if (threadIdx.x == 0 && reserved != 0) base = uint32_t(atomicAdd(counter, Counter(reserved)));
  __syncthreads();
  for (uint32_t i = threadIdx.x; i < count; i += blockDim.x)
    if (base + i < capacity) out[base + i] = staged[i];
}

// The end of the block's read: its survivors to the prefilter (one atomic for the block), its
// fine bins to the shared ones, both from lowest_bin_to_send up.
__device__ void flush_stage(const Stage& stage, const Bound& bound, uint32_t k, const Buffers& buffers,
                            uint32_t* fine_histogram) {
  __syncthreads();
  const uint32_t lowest_bin = lowest_bin_to_send(stage, k, fine_histogram);
  const int32_t* values = stage.values;
  uint32_t count = min(*stage.count, staging_capacity);
  if (lowest_bin != 0) {
    count = compact_stage(stage, uint32_t(bound.key + (uint64_t(lowest_bin) << bound.fine_shift)));
    values = stage.sending;
  }
  copy_to_reserved_place(values, count, count, stage.prefilter_count, buffers.prefiltered, buffers.capacity);
  flush_histogram(stage.fine_bins, fine_histogram, lowest_bin);
}

// The values outside the body (at most 3 + 3), by the first warp of block 0.
__device__ void prefilter_loose_values(const int32_t* in, size_t n, const InputView& input, const Bound& bound,
                                       const Buffers& buffers, uint32_t* count, uint32_t* fine_histogram) {
  if (blockIdx.x != 0 || threadIdx.x >= 32) return;
  const unsigned lane = threadIdx.x;
  const size_t i = lane < 4 ? lane : input.tail_begin + (lane - 4);
  const bool valid = lane < 4 ? i < input.head : (lane < 8 && i < n);
  const int32_t value = valid ? __ldcg(&in[i]) : 0;
  const bool keep = valid && to_key(value) >= bound.key;
  const uint32_t slot = warp_append_slot(keep, count);
  if (!keep) return;
  atomicAdd(&fine_histogram[fine_bin(to_key(value), bound)], 1u);
  if (slot < buffers.capacity) buffers.prefiltered[slot] = value;
}

// Step 1 of the file comment. The bound is right whichever blocks' sample tiles it counts (a
// subset of the input is a subset), so it is drawn once a quorum of the blocks have counted
// theirs, by the block that completes the quorum, and published in one word for all: the
// blocks whose tiles arrive last do not hold everyone up. All blocks are resident (a
// cooperative launch), so the wait ends. The fine bins span from the bound to the top of the
// highest bin counted, at least one bin: on uniform input the bound's one bin of n / 2048
// values, n / 2^22 to a fine bin.
struct Sample {
  bool wide;        // the first two tiles, not the first alone
  uint32_t quorum;  // blocks whose sample tiles draw the bound
};

// One tile per block counted at the quorum puts about quorum * tile_values / bin_count
// values in each bin; while k is a quarter of that or less, the k-th largest of the sample
// lies in the top bin (a bound one bin wide) and the bound comes sooner. Larger k take two
// tiles and a larger quorum, so that the top bin still holds k.
__device__ Sample sample_for(uint32_t k) {
  constexpr uint32_t tile_values = tile_vectors * 4;
  const uint32_t narrow_quorum = (gridDim.x * TopkTuning::narrow_sample_quorum_percent + 99) / 100;
  if (uint64_t(4) * k * bin_count <= uint64_t(narrow_quorum) * tile_values) return {false, narrow_quorum};
  return {true, (gridDim.x * TopkTuning::wide_sample_quorum_percent + 99) / 100};
}

// Adds the block's sample bins to the shared histogram and counts the block in; true when its
// arrival completes the quorum (it then draws the bound). A block sends only its bins at or
// above its own r-th largest key, r = 4k / quorum plus a margin: the quorum's k-th largest
// lies far above that wherever the blocks' data look alike, and where they do not, a
// histogram short of some bins only draws a lower bound (still right). At large k that is a
// small share of the bins above the block's own k-th largest, which would all queue at the
// same addresses.
__device__ bool add_sample(uint32_t k, uint32_t quorum, const uint32_t* shared_bins, uint32_t* bound_histogram,
                           uint32_t* arrivals) {
  __shared__ bool draws;
  __syncthreads();
  const uint32_t sent_rank = min(k, (4 * k + quorum - 1) / quorum + 32);
  const BucketChoice mine = find_bucket(shared_bins, sent_rank, false);
  flush_histogram(shared_bins, bound_histogram, mine.found ? mine.bin : 0);
  __syncthreads();
  if (threadIdx.x == 0) draws = count_in(arrivals) + 1 == quorum;
  __syncthreads();
  return draws;
}

// The drawer: the bound and its fine shift from the histogram, published in one 64-bit word
// (bit 63 marks it written; a zero word is not yet).
__device__ Bound draw_bound(uint32_t k, const uint32_t* bound_histogram, unsigned long long* published) {
  __shared__ uint32_t top;  // the highest bin counted
  if (threadIdx.x == 0) top = 0;
  __syncthreads();
  const BucketChoice choice = find_bucket(bound_histogram, k, true, &top);
  const uint32_t key = choice.found ? choice.bin << digit_shift(0) : 0u;
  const uint64_t span = (uint64_t(top) + 1) << digit_shift(0);
  uint32_t fine_shift = digit_shift(0) - 11;  // one bin of digit 0 in 2048 fine bins
  while ((uint64_t(bin_count) << fine_shift) < span - key) ++fine_shift;
  if (threadIdx.x == 0) atomicExch(published, (1ull << 63) | (uint64_t(fine_shift) << 32) | key);
  return {key, fine_shift};
}

// Everyone else spins on the published word.
__device__ Bound await_bound(unsigned long long* published) {
  __shared__ unsigned long long word;
  if (threadIdx.x == 0) {
    unsigned long long seen;
    while ((seen = *reinterpret_cast<volatile unsigned long long*>(published)) == 0) __nanosleep(32);
    word = seen;
  }
  __syncthreads();
  return {uint32_t(word), uint32_t(word >> 32) & 0xFFu};
}

// Parks a tile in shared memory (where the finish works later), freeing its registers
// for the next loads; unpark gives it back.
__device__ __forceinline__ void park_tile(const Tile& tile, int4* parked) {
#pragma unroll
  for (int u = 0; u < vectors_per_thread; ++u) parked[u * threads + threadIdx.x] = tile.vectors[u];
}

__device__ __forceinline__ Tile unpark_tile(const int4* parked, uint32_t first) {
  Tile tile;
  tile.first = first;
#pragma unroll
  for (int u = 0; u < vectors_per_thread; ++u) tile.vectors[u] = parked[u * threads + threadIdx.x];
  return tile;
}

// The block's tiles from t on, each loaded and kept at or above the bound: two tiles per step,
// 64 KiB in flight per block. The loop bound is the same for the whole block (warp votes
// inside).
__device__ __forceinline__ void prefilter_tiles_from(unsigned t, const InputView& input, const Bound& bound,
                                                     const Buffers& buffers, const Stage& stage) {
  for (; block_tile(input, t + 1) != ~0u; t += 2) {
    const Tile a = load_tile(input, block_tile(input, t));
    const Tile b = load_tile(input, block_tile(input, t + 1));
    prefilter_tile(a, input, bound, buffers, stage);
    prefilter_tile(b, input, bound, buffers, stage);
  }
  if (block_tile(input, t) != ~0u) prefilter_tile(load_tile(input, block_tile(input, t)), input, bound, buffers, stage);
}

// Steps 1 and 2: the one read of the input. The sample tiles make the bound's histogram; the
// block's first three tiles then wait, two in shared memory and one in registers, while the
// blocks agree on the bound. No load of this block is in flight when it counts itself in: the
// atomic's release would wait for them. (A fourth tile held during the wait, in registers or
// by cp.async, delays the tiles the bound waits for: docs/design/03-top-k.md.)
__device__ Bound prefilter_pass(const int32_t* in, size_t n, uint32_t k, SelectState* state, unsigned parity,
                                const Buffers& buffers, uint32_t* shared_bins, int4* parked, int32_t* staged_values) {
  const InputView input = split_input(in, n);
  uint32_t* count = &state->prefilter_count[parity];
  uint32_t* fine_histogram = state->fine_histogram[parity];
  const Sample sample = sample_for(k);
  zero_histogram(shared_bins);
  const Tile first = load_tile(input, block_tile(input, 0));
  const Tile early_second = load_tile(input, sample.wide ? block_tile(input, 1) : ~0u);  // none for a narrow sample
  __syncthreads();
  histogram_tile(first, input, shared_bins);
  histogram_tile(early_second, input, shared_bins);
  park_tile(first, parked);
  if (sample.wide) park_tile(early_second, parked + tile_vectors);
  const bool draws =
      add_sample(k, sample.quorum, shared_bins, state->bound_histogram[parity], &state->bound_arrivals[parity]);
  Bound bound{};
  if (draws) bound = draw_bound(k, state->bound_histogram[parity], &state->published_bound[parity]);
  const Tile late_second = load_tile(input, sample.wide ? ~0u : block_tile(input, 1));
  const Tile third = load_tile(input, block_tile(input, 2));
  if (!sample.wide) park_tile(late_second, parked + tile_vectors);
  if (!draws) bound = await_bound(&state->published_bound[parity]);

  __shared__ uint32_t staged_count;
  const Stage stage{&staged_count, staged_values, shared_bins, count, reinterpret_cast<int32_t*>(parked)};
  zero_histogram(shared_bins);  // the sample is counted: from here on the block's fine bins
  if (threadIdx.x == 0) staged_count = 0;
  __syncthreads();
  prefilter_tile(unpark_tile(parked, first_vector(input, block_tile(input, 0))), input, bound, buffers, stage);
  prefilter_tile(unpark_tile(parked + tile_vectors, first_vector(input, block_tile(input, 1))), input, bound, buffers,
                 stage);
  prefilter_tile(third, input, bound, buffers, stage);
  prefilter_tiles_from(3, input, bound, buffers, stage);
  flush_stage(stage, bound, k, buffers, fine_histogram);
  prefilter_loose_values(in, n, input, bound, buffers, count, fine_histogram);
  return bound;
}

// ---- Step 3, when the fine bins leave too many keys: one block narrows the prefilter ----

// Histograms `digit` of the keys whose decided bits (digits before it) equal prefix.
__device__ void histogram_digit(const uint32_t* keys, uint32_t count, int digit, uint32_t prefix, uint32_t* bins) {
  zero_histogram(bins);
  __syncthreads();
  const uint32_t mask = decided_mask(digit - 1);
  for (uint32_t i = threadIdx.x; i < count; i += threads)
    if ((keys[i] & mask) == prefix) atomicAdd(&bins[digit_of(keys[i], digit)], 1u);
  __syncthreads();
}

// Loads the prefilter into shared memory (several loads in flight per thread) and
// histograms its digit 0 on the way.
__device__ void load_prefilter(const int32_t* prefiltered, uint32_t count, uint32_t* keys, uint32_t* bins) {
  zero_histogram(bins);
  __syncthreads();
  for (uint32_t first = threadIdx.x; first < count; first += items_per_thread * threads) {
    uint32_t loaded[items_per_thread];
#pragma unroll
    for (int u = 0; u < items_per_thread; ++u) {
      const uint32_t i = first + u * threads;
      loaded[u] = i < count ? to_key(__ldcg(&prefiltered[i])) : 0u;
    }
#pragma unroll
    for (int u = 0; u < items_per_thread; ++u) {
      const uint32_t i = first + u * threads;
      if (i < count) {
        keys[i] = loaded[u];
        atomicAdd(&bins[digit_of(loaded[u], 0)], 1u);
      }
    }
  }
  __syncthreads();
}

// The k largest of the prefilter, largest first, into out: find the k-th largest key digit by
// digit, gather the keys above it, add the copies of it that the top k holds, sort.
__device__ void finish_in_shared(const int32_t* prefiltered, uint32_t count, uint32_t k, uint32_t* bins,
                                 uint32_t* keys, int32_t* results, int32_t* out) {
  __shared__ uint32_t winner_count;
  load_prefilter(prefiltered, count, keys, bins);
  uint32_t prefix = 0, rank = k;
  for (int digit = 0; digit < digit_count; ++digit) {
    if (digit > 0) histogram_digit(keys, count, digit, prefix, bins);
    const BucketChoice choice = find_bucket(bins, rank, false);
    prefix |= choice.bin << digit_shift(digit);
    rank -= choice.above;
  }
  const uint32_t threshold = prefix;  // the k-th largest; the top k holds `rank` copies of it
  if (threadIdx.x == 0) winner_count = 0;
  __syncthreads();
  const unsigned lane = threadIdx.x % 32;
  for (uint32_t warp_base = threadIdx.x - lane; warp_base < count; warp_base += threads) {
    const uint32_t i = warp_base + lane;
    const bool winner = i < count && keys[i] > threshold;
    const uint32_t slot = warp_append_slot(winner, &winner_count);
    if (winner) results[slot] = to_value(keys[i]);
  }
  for (uint32_t i = k - rank + threadIdx.x; i < k; i += threads) results[i] = to_value(threshold);
  __syncthreads();
  block_sort_descending(results, k, k, out);
}

// ---- Step 3, otherwise: all blocks narrow together ----

// Digit 0 of every value of src, into state->histogram[0].
__device__ void histogram_pass(const int32_t* src, size_t count, SelectState* state, uint32_t* histogram) {
  zero_histogram(histogram);
  __syncthreads();
  for_each_key(src, count, active_blocks(count),
               [&](uint32_t key, bool valid) { if (valid) atomicAdd(&histogram[digit_of(key, 0)], 1u); });
  __syncthreads();
  flush_histogram(histogram, state->histogram[0]);
}

// Pass 1 or 2: sends the values above the chosen bucket to the result, copies the bucket's
// values to the candidate buffer (when they fit) and histograms their next digit.
template <int Pass>
__device__ void narrow_pass(const int32_t* src, size_t count, uint32_t prefix, bool copy_bucket, SelectState* state,
                            const Buffers& buffers, uint32_t* histogram) {
  static_assert(Pass == 1 || Pass == 2, "passes 1 and 2 narrow");
  const uint32_t group_mask = decided_mask(Pass - 2);  // keys outside the group were settled earlier
  const uint32_t bucket_mask = decided_mask(Pass - 1);
  int32_t* candidates = buffers.candidates[Pass - 1];
  zero_histogram(histogram);
  __syncthreads();
  for_each_key(src, count, active_blocks(count), [&](uint32_t key, bool valid) {
    const bool in_group = valid && (key & group_mask) == (prefix & group_mask);
    const bool winner = in_group && (key & bucket_mask) > prefix;
    const bool in_bucket = in_group && (key & bucket_mask) == prefix;
    const uint32_t slot = warp_append_slot(winner, &state->winner_count);
    if (winner) buffers.unsorted[slot] = to_value(key);
    if (in_bucket) atomicAdd(&histogram[digit_of(key, Pass)], 1u);
    if (copy_bucket) {
      const uint32_t at = warp_append_slot(in_bucket, &state->candidate_count[Pass - 1]);
      if (in_bucket) candidates[at] = to_value(key);
    }
  });
  __syncthreads();
  flush_histogram(histogram, state->histogram[Pass]);
}

// Radix select over src[0..count) by all blocks, a grid barrier after each digit; the k
// results go to buffers.unsorted, and block 0 sorts them when sort_in_block.
__device__ void select_with_all_blocks(const int32_t* in, size_t n, const int32_t* src, size_t count, uint32_t k,
                                       SelectState* state, const Buffers& buffers, int32_t* out, bool sort_in_block,
                                       uint32_t* histogram, int32_t* results) {
  const cg::grid_group grid = cg::this_grid();
  histogram_pass(src, count, state, histogram);
  grid.sync();

  const BucketChoice top = find_bucket(state->histogram[0], k, true);
  uint32_t prefix = top.bin << digit_shift(0);
  uint32_t k_remaining = k - top.above;
  const bool buffered0 = top.count <= buffers.capacity;
  narrow_pass<1>(src, count, prefix, buffered0, state, buffers, histogram);
  grid.sync();

  const BucketChoice middle = find_bucket(state->histogram[1], k_remaining, true);
  prefix |= middle.bin << digit_shift(1);
  k_remaining -= middle.above;
  const bool buffered1 = middle.count <= buffers.capacity;
  narrow_pass<2>(buffered0 ? buffers.candidates[0] : src, buffered0 ? __ldcg(&state->candidate_count[0]) : count,
                 prefix, buffered1, state, buffers, histogram);
  grid.sync();

  // The k-th largest key is now known; the rest of the winners above it, then its copies.
  const BucketChoice bottom = find_bucket(state->histogram[2], k_remaining, true);
  const uint32_t threshold = prefix | bottom.bin;
  k_remaining -= bottom.above;
  const uint32_t group_mask = decided_mask(1);
  const int32_t* last = buffered1 ? buffers.candidates[1] : buffered0 ? buffers.candidates[0] : src;
  const size_t last_count = buffered1 ? __ldcg(&state->candidate_count[1])
                            : buffered0 ? __ldcg(&state->candidate_count[0])
                                        : count;
  for_each_key(last, last_count, active_blocks(last_count), [&](uint32_t key, bool valid) {
    const bool winner = valid && (key & group_mask) == (threshold & group_mask) && key > threshold;
    const uint32_t slot = warp_append_slot(winner, &state->winner_count);
    if (winner) buffers.unsorted[slot] = to_value(key);
  });
  for (size_t i = k - k_remaining + grid.thread_rank(); i < k; i += grid.size()) buffers.unsorted[i] = to_value(threshold);
  if (!sort_in_block) return;  // cub::DeviceRadixSort follows on the stream
  grid.sync();
  if (blockIdx.x != 0) return;
  for (uint32_t i = threadIdx.x; i < k; i += threads) results[i] = __ldcg(&buffers.unsorted[i]);
  block_sort_descending(results, k, k, out);
}

enum FinishPlan : uint32_t { plan_pending = 0, plan_fine_bins = 1, plan_prefilter = 2, plan_all_blocks = 3 };

struct Finish {
  FinishPlan plan;  // plan_pending: another block finishes, this one leaves
  uint32_t prefilter_count;
  BucketChoice fine;  // the fine bin that holds the k-th largest (plan_fine_bins)
};

// After the read: the last block to finish it looks at the prefilter and either finishes alone
// (the others leave) or calls every block to the all-block passes. Like a grid barrier, but
// the block that finishes alone never waits for the others to wake up. It finishes from the
// fine bins when the bin of the k-th largest and those above it hold few enough keys to sort
// in shared memory (it leaves each fine bin's first place in `starts`), else from the whole
// prefilter when that fits shared memory.
__device__ Finish plan_finish(SelectState* state, unsigned parity, uint32_t k, uint32_t capacity, bool sort_in_block,
                              uint32_t* starts) {
  __shared__ bool last;
  __shared__ uint32_t count;
  __shared__ FinishPlan published_plan;
  __syncthreads();  // every thread's copies to the prefilter are issued
  if (threadIdx.x == 0) last = count_in(&state->read_arrivals[parity]) + 1 == gridDim.x;
  __syncthreads();
  volatile uint32_t* published = &state->finish_plan[parity];
  if (last) {
    // The count and the fine bins are final now; both are read at once (find_bucket ends
    // with a barrier, after which every thread sees the count).
    if (threadIdx.x == 0) count = __ldcg(&state->prefilter_count[parity]);
    const BucketChoice fine = find_bucket(state->fine_histogram[parity], k, true, nullptr, starts);
    // The prefilter holds the top k whenever it did not overflow, and the fine bins count it.
    const bool held = count <= capacity && sort_in_block;
    const FinishPlan plan = held && fine.found && fine.above + fine.count <= TopkTuning::block_sort_capacity
                                ? plan_fine_bins
                            : held && count <= TopkTuning::shared_finish_capacity ? plan_prefilter
                                                                                  : plan_all_blocks;
    if (threadIdx.x == 0) *published = plan;
    return {plan, count, fine};
  }
  if (threadIdx.x == 0) {
    while (*published == plan_pending) __nanosleep(64);
    published_plan = FinishPlan(*published);
    count = __ldcg(&state->prefilter_count[parity]);
  }
  __syncthreads();
  return {published_plan == plan_all_blocks ? plan_all_blocks : plan_pending, count, {}};
}

// Sorts keys[begin, end) largest first by one warp: each key's place is the number of keys
// that come before it in that order (ties by index), written through scratch[begin, end).
__device__ void warp_rank_sort(int32_t* keys, uint32_t begin, uint32_t end, int32_t* scratch) {
  const unsigned lane = threadIdx.x % 32;
  for (uint32_t i = begin + lane; i < end; i += 32) {
    const int32_t key = keys[i];
    uint32_t place = begin;
    for (uint32_t j = begin; j < end; ++j) place += keys[j] > key || (keys[j] == key && j < i);
    scratch[place] = key;
  }
  __syncwarp();
  for (uint32_t i = begin + lane; i < end; i += 32) keys[i] = scratch[i];
}

// The usual finish. plan_finish has left in starts[b] the place of fine bin b's first key in
// descending order. Each key at or above lowest_bin takes the next place of its bin (a
// shared-memory atomic), so the candidates land ordered by bin, and one thread sorts each
// bin's few keys by insertion: a counting sort, which the bins already paid for. Bins of up to
// max_warp_run keys (about 64 a bin at 2^28) go to a warp each; a bin of more (crowded data)
// sends the block to the bitonic sort of all candidates. scratch: block_sort_capacity values.
__device__ void finish_from_fine_bins(const int32_t* prefiltered, uint32_t count, uint32_t k, const Bound& bound,
                                      uint32_t lowest_bin, uint32_t candidate_count, uint32_t* starts,
                                      int32_t* candidates, int32_t* scratch, int32_t* out) {
  constexpr uint32_t max_run = 32, max_warp_run = 128;
  // Bins of more than max_run keys among at most block_sort_capacity candidates.
  constexpr uint32_t max_warp_bins = TopkTuning::block_sort_capacity / (max_run + 1);
  __shared__ bool crowded;
  __shared__ uint32_t warp_bins[max_warp_bins];
  __shared__ uint32_t warp_bin_count;
  if (threadIdx.x == 0) {
    crowded = false;
    warp_bin_count = 0;
  }
  const uint32_t lowest_key = uint32_t(bound.key + (uint64_t(lowest_bin) << bound.fine_shift));
  // The prefilter starts 256-byte aligned, and its allocation is rounded up to 256 bytes, so
  // the vector that holds its last value can be read whole.
  const int4* vectors = reinterpret_cast<const int4*>(prefiltered);
  const uint32_t vector_count = (count + 3) / 4;
  constexpr int in_flight = vectors_per_thread;
  for (uint32_t base = threadIdx.x; base < vector_count; base += in_flight * threads) {
    int4 loaded[in_flight];
#pragma unroll
    for (int u = 0; u < in_flight; ++u) {
      const uint32_t i = base + u * threads;
      loaded[u] = i < vector_count ? __ldcg(&vectors[i]) : make_int4(0, 0, 0, 0);
    }
#pragma unroll
    for (int u = 0; u < in_flight; ++u) {
      const uint32_t first = 4 * (base + u * threads);
      const int32_t values[4] = {loaded[u].x, loaded[u].y, loaded[u].z, loaded[u].w};
#pragma unroll
      for (int c = 0; c < 4; ++c)
        if (first + c < count && to_key(values[c]) >= lowest_key)
          candidates[atomicAdd(&starts[fine_bin(to_key(values[c]), bound)], 1u)] = values[c];
    }
  }
  __syncthreads();
  // Bin b's keys now fill [end of bin b + 1, starts[b]): the bins run from the top down.
  for (uint32_t bin = lowest_bin + threadIdx.x; bin < bin_count; bin += threads) {
    const uint32_t begin = bin + 1 < bin_count ? starts[bin + 1] : 0, end = starts[bin];
    if (end - begin > max_run) {
      if (end - begin > max_warp_run)
        crowded = true;
      else
        warp_bins[atomicAdd(&warp_bin_count, 1u)] = bin;
      continue;
    }
    for (uint32_t i = begin + 1; i < end; ++i) {
      const int32_t value = candidates[i];
      uint32_t j = i;
      for (; j > begin && candidates[j - 1] < value; --j) candidates[j] = candidates[j - 1];
      candidates[j] = value;
    }
  }
  __syncthreads();
  if (crowded) {
    block_sort_descending(candidates, candidate_count, k, out);
    return;
  }
  if (warp_bin_count != 0) {
    for (uint32_t j = threadIdx.x / 32; j < warp_bin_count; j += threads / 32) {
      const uint32_t bin = warp_bins[j];
      warp_rank_sort(candidates, bin + 1 < bin_count ? starts[bin + 1] : 0, starts[bin], scratch);
    }
    __syncthreads();
  }
  for (uint32_t i = threadIdx.x; i < k; i += threads) out[i] = candidates[i];
}

// The whole selection: see the file comment for the steps. `parity` picks this call's copy of
// the bound's state.
__global__ void __launch_bounds__(threads, TopkTuning::blocks_per_sm)
    radix_select_kernel(const int32_t* in, size_t n, uint32_t k, unsigned parity, SelectState* state, Buffers buffers,
                        int32_t* out, bool sort_in_block) {
  __shared__ uint32_t histogram[bin_count];
  // dynamic_shared_bytes: the prefilter's keys, then the results (the finish); the read parks
  // tiles over both and stages its survivors after them.
  extern __shared__ uint32_t finish_keys[];
  int32_t* results = reinterpret_cast<int32_t*>(finish_keys + TopkTuning::shared_finish_capacity);
  const cg::grid_group grid = cg::this_grid();

  // Nothing reads these before the grid barrier below: the all-block state, and the next
  // call's copy of the bound's state.
  for (size_t i = grid.thread_rank(); i < sizeof(state->histogram) / sizeof(uint32_t); i += grid.size())
    (&state->histogram[0][0])[i] = 0;
  for (size_t i = grid.thread_rank(); i < bin_count; i += grid.size())
    state->bound_histogram[parity ^ 1][i] = state->fine_histogram[parity ^ 1][i] = 0;
  if (grid.thread_rank() == 0) {
    state->bound_arrivals[parity ^ 1] = state->prefilter_count[parity ^ 1] = 0;
    state->published_bound[parity ^ 1] = 0;
    state->read_arrivals[parity ^ 1] = state->finish_plan[parity ^ 1] = plan_pending;
    state->candidate_count[0] = state->candidate_count[1] = state->winner_count = 0;
  }

  const Bound bound =
      prefilter_pass(in, n, k, state, parity, buffers, histogram, reinterpret_cast<int4*>(finish_keys),
                     reinterpret_cast<int32_t*>(finish_keys) + finish_shared_bytes / sizeof(uint32_t));
  const Finish finish = plan_finish(state, parity, k, buffers.capacity, sort_in_block, histogram);
  if (finish.plan == plan_fine_bins)
    finish_from_fine_bins(buffers.prefiltered, finish.prefilter_count, k, bound, finish.fine.bin,
                          finish.fine.above + finish.fine.count, histogram, results,
                          reinterpret_cast<int32_t*>(finish_keys), out);
  if (finish.plan == plan_prefilter)
    finish_in_shared(buffers.prefiltered, finish.prefilter_count, k, histogram, finish_keys, results, out);
  if (finish.plan != plan_all_blocks) return;
  const bool prefilter_holds = finish.prefilter_count <= buffers.capacity;
  select_with_all_blocks(in, n, prefilter_holds ? buffers.prefiltered : in,
                         prefilter_holds ? finish.prefilter_count : n, k, state, buffers, out, sort_in_block,
                         histogram, results);
}

// ---- Inputs that fit on chip: each block holds its share while the bound is drawn ----
//
// From about 7 to 10.3 million values on 132 SMs, the whole input fits in the SMs' shared memory
// and registers: one block of 1024 threads an SM holds 19 vectors a thread, 13 in shared memory
// and 6 in registers. Holding it removes the general kernel's limit there: a block that waits for
// the bound waits with its data already loaded, so the read never stops, and the values are kept
// from shared memory once the bound is known. The bound is drawn from a pool: each block sends
// up to 32 of its first batch's values near its top and counts itself in, and the block that
// completes the quorum draws the k-th largest of what was sent (a subset of the input: a lower
// bound, always right). Blocks append the values at or above it to one list; the last to finish ranks
// the list when it holds, and otherwise (sorted runs, heavy ties: the pool starved) calls every
// block to an exact radix select over what they still hold, with grid barriers.
struct HeldTuning {
  static constexpr int threads_per_block = 1024;
  static constexpr int sampled_vectors = 7;   // loaded into registers, sampled, then into shared memory
  static constexpr int copied_vectors = 6;    // cp.async into shared memory while the sample is sent
  static constexpr int register_vectors = 6;  // loaded while the bound is drawn, kept in registers
  static constexpr int pool_slots = 32;       // keys a block sends to the pool
  static constexpr int quorum_percent = 50;   // waiting for every block is slower (the design record)
  static constexpr uint32_t list_capacity = TopkTuning::shared_finish_capacity;
};

namespace held {
constexpr int threads = HeldTuning::threads_per_block;
constexpr int batch_a = HeldTuning::sampled_vectors, batch_b = HeldTuning::copied_vectors;
constexpr int batch_c = HeldTuning::register_vectors;
constexpr int in_shared = batch_a + batch_b;
constexpr int vectors_per_thread = in_shared + batch_c;
constexpr int slots = HeldTuning::pool_slots;
constexpr uint32_t list_capacity = HeldTuning::list_capacity;
constexpr int max_blocks = 256;  // the drawer reads every slot at once
constexpr int slots_per_thread = max_blocks * slots / threads;
static_assert(bin_count % threads == 0, "each thread scans whole groups of bins");
// The held vectors and a histogram; the last block's finish reuses the same memory.
constexpr size_t finish_shared_bytes = (2 * list_capacity + 3 * bin_count) * sizeof(uint32_t);
constexpr size_t holding_shared_bytes = size_t(in_shared) * threads * sizeof(uint4) + bin_count * sizeof(uint32_t);
constexpr size_t shared_bytes = std::max(holding_shared_bytes, finish_shared_bytes);
constexpr uint4 none = {0x80000000u, 0x80000000u, 0x80000000u, 0x80000000u};  // past the input (never kept)

enum Plan : uint32_t { plan_ranked_list = 1, plan_exact_select = 2 };

// The tagged words carry the call's tag in their top half, so a reader knows a word is this
// call's without a fence or a reset between calls. The counters are zeroed by the call's last
// block once every block is done with them.
// Each block's row of the pool fills whole 128-byte lines, and the word every block polls for the
// bound has a line of its own, away from the counters' atomics.
struct alignas(128) State {
  unsigned long long pool[max_blocks * slots];   // tag << 32 | key
  alignas(128) unsigned long long published;     // tag << 32 | the bound
  alignas(128) unsigned long long sample_tally;  // blocks counted in << 32 | keys they sent
  unsigned long long plan;                       // tag << 32 | Plan
  // Blocks done keeping << 32 | values appended to the list (past its capacity: the exact
  // select). One word, so that the last block's arrival also tells it how many were appended.
  unsigned long long list_tally;
  alignas(128) uint32_t histogram[digit_count][bin_count];  // the exact select's digits
};

__device__ __forceinline__ unsigned long long tagged(uint32_t tag, uint32_t word) {
  return (static_cast<unsigned long long>(tag) << 32) | word;
}
__device__ __forceinline__ cuda::atomic_ref<unsigned long long, cuda::thread_scope_device> device_word(
    unsigned long long& word) {
  return cuda::atomic_ref<unsigned long long, cuda::thread_scope_device>(word);
}
// A warp-wide sum, minimum or maximum: one redux.sync from sm_80 on, shuffles before it.
enum class WarpOp { sum, min, max };
template <WarpOp op>
__device__ __forceinline__ uint32_t warp_reduce(uint32_t x) {
#if __CUDA_ARCH__ >= 800
  if constexpr (op == WarpOp::sum)
    return __reduce_add_sync(~0u, x);
  else if constexpr (op == WarpOp::min)
    return __reduce_min_sync(~0u, x);
  else
    return __reduce_max_sync(~0u, x);
#else
  for (int offset = 16; offset > 0; offset /= 2) {
    const uint32_t other = __shfl_xor_sync(~0u, x, offset);
    x = op == WarpOp::sum ? x + other : op == WarpOp::min ? min(x, other) : max(x, other);
  }
  return x;
#endif
}
__device__ __forceinline__ uint32_t max_key(uint4 v) {
  return max(max(to_key(int32_t(v.x)), to_key(int32_t(v.y))), max(to_key(int32_t(v.z)), to_key(int32_t(v.w))));
}

// The bin that holds the rank-th largest of a histogram, at the held kernel's block size.
__device__ __forceinline__ BucketChoice find_held_bucket(const uint32_t* histogram, uint32_t rank, bool in_global,
                                                         uint32_t* starts = nullptr) {
  return find_bucket<threads, cub::BLOCK_SCAN_WARP_SCANS>(histogram, rank, in_global, nullptr, starts);
}

// Where a thread's vectors are: u < batch_a + batch_b in shared memory (held[u * threads + t]),
// the rest in its registers. Only C can run past the input: its first `valid_c` vectors hold.
struct Held {
  const uint4* shared;
  uint4 c[batch_c];
  int valid_c;
};

// Calls visit(v, valid) on the thread's held vectors `group` at a time (so that C's registers
// stay free of spills), the whole warp together.
constexpr int group = 3;
template <class Visit>
__device__ __forceinline__ void for_each_held_group(const Held& held, Visit visit) {
  static_assert(batch_c % group == 0, "whole groups in registers");
#pragma unroll
  for (int g = 0; g < in_shared; g += group) {
    uint4 v[group];
#pragma unroll
    for (int u = 0; u < group; ++u) v[u] = g + u < in_shared ? held.shared[(g + u) * threads + threadIdx.x] : none;
    visit(v, in_shared - g);
  }
#pragma unroll
  for (int g = 0; g < batch_c; g += group) {
    uint4 v[group];
#pragma unroll
    for (int u = 0; u < group; ++u) v[u] = held.c[g + u];
    visit(v, held.valid_c - g);
  }
}

// Appends the keys of v[0, valid) at or above `lowest` to a list of `capacity` (one atomic a warp,
// none when the warp has none); past the capacity they are only counted. The whole warp calls it.
template <int batch, class Counter>
__device__ __forceinline__ void append_at_or_above(const uint4 (&v)[batch], int valid, uint32_t lowest, uint32_t* list,
                                                   uint32_t capacity, Counter* count) {
  uint32_t mine = 0;
#pragma unroll
  for (int u = 0; u < batch; ++u)
    if (u < valid)
      mine += (to_key(int32_t(v[u].x)) >= lowest) + (to_key(int32_t(v[u].y)) >= lowest) +
              (to_key(int32_t(v[u].z)) >= lowest) + (to_key(int32_t(v[u].w)) >= lowest);
  if (warp_reduce<WarpOp::sum>(mine) == 0) return;
  uint32_t at = warp_reserve(mine, count);
#pragma unroll
  for (int u = 0; u < batch; ++u)
    for (uint32_t x : {v[u].x, v[u].y, v[u].z, v[u].w})
      if (u < valid && to_key(int32_t(x)) >= lowest) {
        if (at < capacity) list[at] = to_key(int32_t(x));
        ++at;
      }
}

// The keys a block keeps are staged in its shared histogram's place first, then moved to the list
// with one atomic for the block: at large k, thousands of warps' atomics on the list's one counter
// queue behind each other and hold up the last block's arrival (the design record times it).
constexpr uint32_t stage_capacity = bin_count;
// More than the stage holds: none moved, the list counted past its capacity, so the exact select
// takes over.
__device__ void move_staged(const uint32_t* stage, uint32_t staged, State* state, uint32_t* list) {
  const bool fits = staged <= stage_capacity;
  copy_to_reserved_place(stage, fits ? staged : 0, fits ? staged : list_capacity + 1ull, &state->list_tally, list,
                         list_capacity);
}

// What a block's arrival at the pool tells it: whether it draws, and how many keys the blocks
// counted in so far sent (the drawer waits until that many have landed).
struct Arrival {
  bool draws;
  uint32_t keys_sent;
};

// Sends to the block's row of the pool the first `slots` of its keys at or above the r-th
// largest of its threads' maxima (one histogram entry a thread; ties past `slots` stay home),
// and counts the block in. The arrival is relaxed: a fence would wait for every copy the block
// has in flight. It adds the block's count of sent keys instead.
__device__ Arrival send_sample(uint32_t most, const uint4* sampled, uint32_t r, uint32_t* counts,
                               unsigned long long* row, uint32_t tag, uint32_t quorum, State* state) {
  __shared__ uint32_t claimed;
  __shared__ Arrival arrival;
  for (int b = threadIdx.x; b < bin_count; b += threads) counts[b] = 0;
  if (threadIdx.x == 0) claimed = 0;
  __syncthreads();
  atomicAdd(&counts[most >> 21], 1u);
  __syncthreads();
  const uint32_t threshold = find_held_bucket(counts, r, false).bin << 21;
  if (most >= threshold) {
#pragma unroll
    for (int u = 0; u < batch_a; ++u) {
      const uint4 v = sampled[u * threads + threadIdx.x];
      for (uint32_t x : {v.x, v.y, v.z, v.w})
        if (to_key(int32_t(x)) >= threshold) {
          const uint32_t slot = atomicAdd(&claimed, 1u);
          if (slot < slots) device_word(row[slot]).store(tagged(tag, to_key(int32_t(x))), cuda::memory_order_relaxed);
        }
    }
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    const uint32_t sent = min(claimed, uint32_t(slots));
    const unsigned long long before =
        device_word(state->sample_tally).fetch_add((1ull << 32) | sent, cuda::memory_order_relaxed);
    arrival = {before >> 32 == quorum - 1, uint32_t(before) + sent};
  }
  __syncthreads();
  return arrival;
}

// The drawer: once keys_sent keys of this call have landed in the pool, the k-th largest of them
// to the width of one of 2048 bins over their own range (0 when fewer than k were sent).
__device__ uint32_t draw_bound(State* state, uint32_t k, uint32_t tag, uint32_t keys_sent, uint32_t* counts) {
  __shared__ uint32_t landed, lowest, highest;
  uint32_t key[slots_per_thread];
  bool real[slots_per_thread];
  for (int b = threadIdx.x; b < bin_count; b += threads) counts[b] = 0;
  do {  // one round trip: every slot at once
    __syncthreads();
    if (threadIdx.x == 0) landed = 0, lowest = ~0u, highest = 0;
    uint32_t mine = 0;
#pragma unroll
    for (int u = 0; u < slots_per_thread; ++u) {
      const uint32_t slot = u * threads + threadIdx.x;
      const unsigned long long word =
          slot < gridDim.x * slots ? device_word(state->pool[slot]).load(cuda::memory_order_relaxed) : 0;
      real[u] = word >> 32 == tag;
      key[u] = uint32_t(word);
      mine += real[u];
    }
    __syncthreads();
    if (mine != 0) atomicAdd(&landed, mine);
    __syncthreads();
  } while (landed < keys_sent);
  if (landed < k) return 0;  // no k-th largest in the pool: every value passes
  uint32_t low = ~0u, high = 0;
#pragma unroll
  for (int u = 0; u < slots_per_thread; ++u)
    if (real[u]) low = min(low, key[u]), high = max(high, key[u]);
  low = warp_reduce<WarpOp::min>(low);
  high = warp_reduce<WarpOp::max>(high);
  if (threadIdx.x % 32 == 0) atomicMin(&lowest, low), atomicMax(&highest, high);
  __syncthreads();
  const uint32_t span = highest - lowest;
  const uint32_t shift = span < bin_count ? 0 : 32 - __clz(span >> 11);  // (span >> shift) < bin_count
#pragma unroll
  for (int u = 0; u < slots_per_thread; ++u)
    if (real[u]) atomicAdd(&counts[(key[u] - lowest) >> shift], 1u);
  __syncthreads();
  return lowest + (find_held_bucket(counts, k, false).bin << shift);
}

// Every block other than the drawer spins on the published word (the bound and the tag in one
// 64-bit word: neither side needs a fence).
__device__ uint32_t await_bound(State* state, uint32_t tag) {
  __shared__ uint32_t bound;
  if (threadIdx.x == 0) {
    unsigned long long word;
    while ((word = device_word(state->published).load(cuda::memory_order_relaxed)) >> 32 != tag) {
    }
    bound = uint32_t(word);
  }
  __syncthreads();
  return bound;
}

// A short list (the few dozen keys that pass at k = 10): each key ranked against all of them in
// shared memory, four at a time, with no bins to count and scan.
constexpr uint32_t short_list = 256;
__device__ void rank_short_list(const uint32_t* list, uint32_t count, uint32_t k, uint32_t* shared, int32_t* out) {
  const uint32_t t = threadIdx.x, padded = (count + 3) / 4 * 4;
  // Padding keys are 0 and placed after every real key: never above one, nor equal and before it.
  const uint32_t key = t < count ? __ldcg(&list[t]) : 0;
  if (t < padded) shared[t] = key;
  __syncthreads();
  if (t >= count) return;
  const uint4* quads = reinterpret_cast<const uint4*>(shared);
  uint32_t rank = 0;
  for (uint32_t q = 0; q < padded / 4; ++q) {
    const uint4 four = quads[q];
    const uint32_t j = 4 * q;
    rank += (four.x > key || (four.x == key && j < t)) + (four.y > key || (four.y == key && j + 1 < t)) +
            (four.z > key || (four.z == key && j + 2 < t)) + (four.w > key || (four.w == key && j + 3 < t));
  }
  if (rank < k) out[rank] = to_value(key);
}

// The last block: the list's keys (all at or above `lowest`) counted in fine bins over their
// range, placed by bin from the top, and each ranked among its bin's keys; the first k written.
// Up to short_list keys skip the bins.
__device__ void rank_list(const uint32_t* list, uint32_t count, uint32_t k, uint32_t lowest, uint32_t* shared,
                          int32_t* out) {
  if (count <= short_list) return rank_short_list(list, count, k, shared, out);
  uint32_t* keys = shared;
  uint32_t* grouped = keys + list_capacity;
  uint32_t* counts = grouped + list_capacity;
  uint32_t* higher = counts + bin_count;
  uint32_t* filled = higher + bin_count;
  __shared__ uint32_t top;
  const int t = threadIdx.x;
  for (int b = t; b < bin_count; b += threads) counts[b] = filled[b] = 0;
  if (t == 0) top = 0;
  uint32_t local_top = 0;
  constexpr int loads = 4;  // in flight at once: one round trip for up to 4096 keys
  for (uint32_t first = t; first < count; first += loads * threads) {
    uint32_t key[loads];
#pragma unroll
    for (int j = 0; j < loads; ++j) key[j] = first + j * threads < count ? __ldcg(&list[first + j * threads]) : 0;
#pragma unroll
    for (int j = 0; j < loads; ++j)
      if (first + j * threads < count) {
        keys[first + j * threads] = key[j];
        local_top = max(local_top, key[j] - lowest);
      }
  }
  local_top = warp_reduce<WarpOp::max>(local_top);
  __syncthreads();
  if (t % 32 == 0) atomicMax(&top, local_top);
  __syncthreads();
  const uint32_t shift = top < bin_count ? 0 : 32 - __clz(top >> 11);
  for (uint32_t i = t; i < count; i += threads) atomicAdd(&counts[(keys[i] - lowest) >> shift], 1u);
  __syncthreads();
  const BucketChoice kth = find_held_bucket(counts, k, false, higher);
  const uint32_t placed = kth.above + kth.count;  // the keys in the k-th largest's bin and above
  for (uint32_t i = t; i < count; i += threads) {
    const uint32_t b = (keys[i] - lowest) >> shift;
    if (higher[b] < k) grouped[higher[b] + atomicAdd(&filled[b], 1u)] = keys[i];
  }
  __syncthreads();
  for (uint32_t p = t; p < placed; p += threads) {
    const uint32_t key = grouped[p];
    const uint32_t b = (key - lowest) >> shift;
    // Its place: the keys in higher bins, the larger ones in its own, the equal ones before it.
    const uint32_t first = higher[b], end = first + counts[b];
    uint32_t rank = first;
    for (uint32_t j = first; j < end; ++j) rank += grouped[j] > key || (grouped[j] == key && j < p);
    if (rank < k) out[rank] = to_value(key);
  }
}

// The block counts itself in; the last one decides how the call ends, leaves the counters
// zeroed for the next call and publishes the plan, which every other block waits for.
__device__ Plan plan_end(State* state, uint32_t tag, uint32_t& survivors) {
  __shared__ Plan plan;
  __shared__ uint32_t counted;
  __syncthreads();
  if (threadIdx.x == 0) {
    const unsigned long long before = device_word(state->list_tally).fetch_add(1ull << 32, cuda::memory_order_acq_rel);
    if (before >> 32 == gridDim.x - 1) {
      counted = uint32_t(before);
      plan = counted <= list_capacity ? plan_ranked_list : plan_exact_select;
      state->list_tally = 0;
      state->sample_tally = 0;
      // The ranked list's plan only lets the others leave, so it needs no fence (the next call
      // sees the zeroed counters after the kernel boundary); the exact select's others append
      // to the list again, after the zeroed tally.
      device_word(state->plan)
          .store(tagged(tag, plan), plan == plan_ranked_list ? cuda::memory_order_relaxed : cuda::memory_order_release);
    } else {
      unsigned long long word;
      while ((word = device_word(state->plan).load(cuda::memory_order_acquire)) >> 32 != tag) __nanosleep(64);
      plan = Plan(uint32_t(word));
      counted = 0;  // only the last block ranks the list
    }
  }
  __syncthreads();
  survivors = counted;
  return plan;
}

// Every block: the k-th largest key by its three digits over the keys it holds at or above the
// bound (at least k in all), a grid barrier a digit; then the keys above it appended to the list
// and, after one more barrier, block 0 ranks them and fills the rest of the k with the k-th.
__device__ void exact_select(const Held& held, uint32_t k, uint32_t bound, State* state, uint32_t* list,
                             uint32_t* shared, int32_t* out) {
  const cg::grid_group grid = cg::this_grid();
  uint32_t* counts = shared + in_shared * threads * 4;
  uint32_t prefix = 0, rank = k;
  for (int digit = 0; digit < digit_count; ++digit) {
    for (int b = threadIdx.x; b < bin_count; b += threads) counts[b] = 0;
    __syncthreads();
    for_each_held_group(held, [&](const auto& v, int valid) {
      for (int u = 0; u < group; ++u)
        for (uint32_t x : {v[u].x, v[u].y, v[u].z, v[u].w}) {
          const uint32_t key = to_key(int32_t(x));
          if (u < valid && key >= bound && (key & decided_mask(digit - 1)) == prefix)
            atomicAdd(&counts[digit_of(key, digit)], 1u);
        }
    });
    __syncthreads();
    for (int b = threadIdx.x; b < bin_count; b += threads)
      if (counts[b] != 0) atomicAdd(&state->histogram[digit][b], counts[b]);
    grid.sync();
    const BucketChoice choice = find_held_bucket(state->histogram[digit], rank, true);
    prefix |= choice.bin << digit_shift(digit);
    rank -= choice.above;
  }
  // prefix is the k-th largest key; `rank` copies of it complete the top k.
  const uint32_t above = k - rank;
  if (above != 0)
    for_each_held_group(held, [&](const auto& v, int valid) {
      append_at_or_above(v, valid, prefix + 1, list, list_capacity, &state->list_tally);
    });
  grid.sync();
  if (blockIdx.x != 0) return;
  if (above != 0) rank_list(list, above, above, prefix + 1, shared, out);
  for (uint32_t i = above + threadIdx.x; i < k; i += threads) out[i] = to_value(prefix);
  for (int i = threadIdx.x; i < digit_count * bin_count; i += threads) (&state->histogram[0][0])[i] = 0;
  if (threadIdx.x == 0) state->list_tally = 0;
}

// The whole selection for a held input: `vectors` 16-byte vectors, at least in_shared and at most
// vectors_per_thread a thread; r is each block's rank among its threads' maxima for the pool.
__global__ void __launch_bounds__(threads, 1)
    held_select_kernel(const uint4* in, uint32_t vectors, uint32_t k, uint32_t r, uint32_t quorum, uint32_t tag,
                       State* state, uint32_t* list, int32_t* out) {
  extern __shared__ uint4 held_vectors[];
  uint32_t* shared = reinterpret_cast<uint32_t*>(held_vectors);
  uint32_t* counts = shared + in_shared * threads * 4;
  const uint32_t t = threadIdx.x, stride = gridDim.x * threads, first = blockIdx.x * threads + t;
  unsigned long long* row = state->pool + blockIdx.x * slots;
  // The row written whole first (tag 0: nobody's), so that the drawer finds all of it in L2
  // rather than behind the read's traffic to memory.
  if (t < slots) device_word(row[t]).store(0, cuda::memory_order_relaxed);
  uint32_t most = 0;  // from A's registers, before they go to shared memory
  {
    uint4 a[batch_a];
#pragma unroll
    for (int u = 0; u < batch_a; ++u) a[u] = __ldcs(in + first + u * stride);
#pragma unroll
    for (int u = 0; u < batch_a; ++u) {
      most = max(most, max_key(a[u]));
      held_vectors[u * threads + t] = a[u];
    }
  }
  // B by cp.async: in registers, ptxas spills it straight after its loads, and a spill waits.
#pragma unroll
  for (int u = batch_a; u < in_shared; ++u)
    __pipeline_memcpy_async(held_vectors + u * threads + t, in + first + u * stride, sizeof(uint4));
  __pipeline_commit();
  const Arrival arrival = send_sample(most, held_vectors, r, counts, row, tag, quorum, state);
  Held held{held_vectors, {}, 0};
  auto load_c = [&] {
#pragma unroll
    for (int u = 0; u < batch_c; ++u) {
      const uint32_t at = first + (in_shared + u) * stride;
      held.c[u] = at < vectors ? __ldcs(in + at) : none;
      held.valid_c += at < vectors;
    }
  };
  uint32_t bound;
  if (arrival.draws) {  // the drawer draws first: the others wait on it
    bound = draw_bound(state, k, tag, arrival.keys_sent, counts);
    if (t == 0) device_word(state->published).store(tagged(tag, bound), cuda::memory_order_relaxed);
    load_c();
  } else {
    load_c();
    bound = await_bound(state, tag);
  }
  __shared__ uint32_t staged;
  if (t == 0) staged = 0;
  __pipeline_wait_prior(0);
  __syncthreads();  // B in shared memory for every thread; the draw is done with `counts`
  for_each_held_group(
      held, [&](const auto& v, int valid) { append_at_or_above(v, valid, bound, counts, stage_capacity, &staged); });
  __syncthreads();
  move_staged(counts, staged, state, list);
  uint32_t survivors = 0;
  const Plan plan = plan_end(state, tag, survivors);
  if (plan == plan_exact_select)
    exact_select(held, k, bound, state, list, shared, out);
  else if (survivors != 0)
    rank_list(list, survivors, k, bound, shared, out);
}
}  // namespace held

// One device allocation, carved into the pieces the kernel needs; the state comes first so
// that it stays in place when the allocation is reused for another n or k.
struct Workspace {
  size_t held_state_offset = 0, prefiltered_offset = 0, candidates_offset[2] = {}, unsorted_offset = 0, sort_offset = 0,
         total = 0;
  size_t sort_bytes = 0;
  size_t states_end = 0;  // both kernels' states, zeroed once when the workspace is allocated
  uint32_t capacity = 0;

  Workspace(size_t n, int k) {
    // Spread-out data leaves ~n/2048 values in a bucket; a bucket above n/16 (few distinct
    // values) is cheaper to re-read from the input than to copy.
    const size_t floor = size_t(1) << 16;
    capacity = uint32_t(n < floor ? n : (n / 16 > floor ? n / 16 : floor));
    if (k > TopkTuning::block_sort_capacity)
      cub::DeviceRadixSort::SortKeysDescending(nullptr, sort_bytes, static_cast<const int32_t*>(nullptr),
                                               static_cast<int32_t*>(nullptr), k);
    auto take = [this](size_t bytes) {
      const size_t at = total;
      total += (bytes + 255) / 256 * 256;
      return at;
    };
    take(sizeof(SelectState));
    held_state_offset = take(sizeof(held::State));
    states_end = total;
    prefiltered_offset = take(capacity * sizeof(int32_t));
    candidates_offset[0] = take(capacity * sizeof(int32_t));
    candidates_offset[1] = take(capacity * sizeof(int32_t));
    unsorted_offset = take(size_t(k) * sizeof(int32_t));
    sort_offset = take(sort_bytes);
  }
};

// The workspace is kept per device between calls and grown when a call needs more: a
// cudaMallocAsync per call costs more than the selection at n = 10^7. Because of it, calls
// on one device must not overlap: two streams running topk at once would share it.
struct DeviceScratch {
  char* workspace = nullptr;
  size_t bytes = 0;
  unsigned grid = 0;        // blocks that fit on the device at once, as a cooperative launch needs
  unsigned calls = 0;       // launched so far: the parity of the bound's state
  unsigned held_grid = 0;   // the held kernel's blocks, one an SM; 0 where it does not fit
  unsigned held_calls = 0;  // its launches so far: its tags
};

// One block of the held kernel an SM, when its shared memory fits and the drawer can read every
// block's row of the pool.
unsigned held_grid_for(int device) {
  int sm_count = 0, per_sm = 0;
  cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, device);
  if (sm_count > held::max_blocks ||
      cudaFuncSetAttribute(held::held_select_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           int(held::shared_bytes)) != cudaSuccess ||
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, held::held_select_kernel, held::threads,
                                                    held::shared_bytes) != cudaSuccess ||
      per_sm < 1) {
    cudaGetLastError();  // not an error of the caller's: the general kernel takes every input
    return 0;
  }
  return unsigned(sm_count);
}

// Returns the device's workspace (nullptr on a CUDA error) and its record, whose `calls` the
// caller counts once its launch succeeded.
char* scratch_for(const Workspace& plan, DeviceScratch*& record, cudaStream_t stream) {
  constexpr int max_devices = 64;
  static DeviceScratch scratch[max_devices];
  static std::mutex mutex;
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || device >= max_devices) return nullptr;
  std::lock_guard<std::mutex> lock(mutex);
  DeviceScratch& mine = scratch[device];
  if (mine.grid == 0) {
    if (cudaFuncSetAttribute(radix_select_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             int(dynamic_shared_bytes)) != cudaSuccess)
      return nullptr;
    int sm_count = 0, per_sm = 0;
    cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, device);
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, radix_select_kernel, threads, dynamic_shared_bytes);
    mine.grid = unsigned(sm_count * (per_sm > 0 ? per_sm : 1));
    mine.held_grid = held_grid_for(device);
  }
  record = &mine;
  const size_t bytes = plan.total;
  if (mine.bytes < bytes) {
    if (mine.workspace != nullptr) cudaFree(mine.workspace);  // waits for calls still using it
    mine.workspace = nullptr;
    mine.bytes = 0;
    if (cudaMalloc(&mine.workspace, bytes) != cudaSuccess) return nullptr;
    mine.bytes = bytes;
    // Both copies of the bound's state start zeroed, each call then zeroing the other's; the
    // held kernel's last block leaves its state zeroed.
    if (cudaMemsetAsync(mine.workspace, 0, plan.states_end, stream) != cudaSuccess) return nullptr;
  }
  return mine.workspace;
}

// Launches the held kernel when the input fits it (aligned whole vectors, from in_shared to
// vectors_per_thread a thread) and the pool's quorum sends at least twice k keys; false otherwise.
bool launch_held(const int32_t* d_in, size_t n, int k, int32_t* d_out, DeviceScratch& scratch, char* workspace,
                 const Workspace& plan, cudaStream_t stream) {
  const size_t blocks = scratch.held_grid, per_vector = blocks * held::threads;
  uint32_t quorum = std::max<uint32_t>(1, uint32_t(blocks * HeldTuning::quorum_percent / 100));
  if (blocks == 0 || plan.capacity < held::list_capacity || reinterpret_cast<uintptr_t>(d_in) % sizeof(uint4) != 0 ||
      n % 4 != 0 || n / 4 < held::in_shared * per_vector || n / 4 > held::vectors_per_thread * per_vector ||
      size_t(k) * 2 > size_t(quorum) * held::slots)
    return false;
  const uint4* in = reinterpret_cast<const uint4*>(d_in);
  uint32_t vectors = uint32_t(n / 4), k32 = uint32_t(k), r = uint32_t((2 * k32 + blocks - 1) / blocks);
  uint32_t tag = scratch.held_calls % 0xFFFFFFFFu + 1;  // never 0: the pool's zeroed slots are nobody's
  auto* state = reinterpret_cast<held::State*>(workspace + plan.held_state_offset);
  auto* list = reinterpret_cast<uint32_t*>(workspace + plan.prefiltered_offset);
  void* args[] = {&in, &vectors, &k32, &r, &quorum, &tag, &state, &list, &d_out};
  if (cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(held::held_select_kernel), dim3(blocks),
                                  dim3(held::threads), args, held::shared_bytes, stream) == cudaSuccess)
    ++scratch.held_calls;
  return true;
}

}  // namespace

extern "C" void topk(const int32_t* d_in, size_t n, int k, int32_t* d_out, cudaStream_t stream) {
  if (k < 1 || size_t(k) > n || n > UINT32_MAX) {
    std::fprintf(stderr, "topk: needs 1 <= k <= n < 2^32 (k = %d, n = %zu); d_out was not written\n", k, n);
    return;
  }
  const Workspace plan(n, k);
  DeviceScratch* scratch = nullptr;
  char* workspace = scratch_for(plan, scratch, stream);
  if (workspace == nullptr) return;  // the CUDA error stays visible to the caller
  if (launch_held(d_in, n, k, d_out, *scratch, workspace, plan, stream)) return;
  unsigned parity = scratch->calls % 2;

  auto* state = reinterpret_cast<SelectState*>(workspace);
  Buffers buffers{reinterpret_cast<int32_t*>(workspace + plan.prefiltered_offset),
                  {reinterpret_cast<int32_t*>(workspace + plan.candidates_offset[0]),
                   reinterpret_cast<int32_t*>(workspace + plan.candidates_offset[1])},
                  plan.capacity,
                  reinterpret_cast<int32_t*>(workspace + plan.unsorted_offset)};
  uint32_t k32 = uint32_t(k);
  bool sort_in_block = k <= TopkTuning::block_sort_capacity;
  void* args[] = {&d_in, &n, &k32, &parity, &state, &buffers, &d_out, &sort_in_block};
  if (cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(radix_select_kernel), dim3(scratch->grid),
                                  dim3(threads), args, dynamic_shared_bytes, stream) != cudaSuccess)
    return;
  ++scratch->calls;  // the kernel zeroes the other copy of the bound's state for the next call
  if (!sort_in_block) {
    size_t sort_bytes = plan.sort_bytes;
    cub::DeviceRadixSort::SortKeysDescending(workspace + plan.sort_offset, sort_bytes, buffers.unsorted, d_out, k, 0,
                                             32, stream);
  }
}
