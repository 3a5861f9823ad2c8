// Lab 09 reference: an LSD radix sort of 32-bit keys with 8-bit digits, in the one-sweep
// style of Adinets and Merrill ("Onesweep: A Faster Least Significant Digit Radix Sort for
// GPUs", 2022), the method behind cub::DeviceRadixSort on recent GPUs, written out without CUB.
//
// 1. One histogram kernel reads every key once and counts all four digits at the same time:
//    four histograms of 256 bins. Its last block scans them into each digit's start.
// 2. Four passes, one per digit, from the lowest to the highest. Each pass is one kernel that
//    reads every key once and writes it once, to the other buffer. A block takes the next
//    tile of keys and counts the tile's keys of each digit first, so that it can publish
//    those counts at once. Where a digit's keys of this tile go in the output is the digit's
//    start plus the same digit's counts in all earlier tiles: the block learns that sum by a
//    decoupled look-back over the earlier tiles' published counts, one digit per thread, as
//    a single-pass scan does with sums. Meanwhile it ranks its keys inside the tile (stable:
//    equal digits keep their order) and places them in shared memory sorted by digit. Then
//    it writes the tile out, where consecutive threads write mostly consecutive addresses.
//
// Memory traffic: 4 bytes read for the histogram, then 8 bytes (read and write) per pass per
// key: 36 bytes per key, plus clearing the look-back status (about 0.11 byte per key per pass
// with tiles of 9216 keys).
//
// Where the speed comes from, each step faster than the one before it (each timed beside
// cub::DeviceRadixSort::SortKeys; the table, and the steps that lost: docs/design/09-radix-sort.md):
//   - counts published before ranking, and each pass clearing the next one's look-back status
//     instead of a memset;
//   - the look-back reads 4 predecessors at once (a walk over aggregates pays one L2 round
//     trip per tile; 8 or 16 at once cost more than they save);
//   - 256 threads at 3 blocks per SM: a block waiting in its look-back idles a third of the
//     SM, not half;
//   - loads and stores at constant offsets from one pointer per thread (no 64-bit address
//     arithmetic per key);
//   - the ballots in PTX: the C++ ballot loop compiles to seven instructions per digit bit,
//     the PTX one to about three; the digit by PRMT;
//   - 36 keys per thread; the leader's atomic predicated, not branched around.
// Against CUB's kernel the pass executes about the same instructions, but its three blocks of
// 8 warps per SM (CUB: two of 12) keep more warps issuing and more loads in flight.
#include "sort.h"

#include <cstdint>

namespace {

using u32 = uint32_t;

constexpr int radix_bits = 8;
constexpr int radix = 1 << radix_bits;        // 256 digit values
constexpr int passes = 32 / radix_bits;       // 4: an even count, so the result ends in d_keys
constexpr int warp_size = 32;
constexpr unsigned full_mask = 0xffffffffu;
static_assert(passes % 2 == 0, "the passes alternate buffers: an even count leaves the keys in d_keys");

// The pass kernel's shape, measured against other shapes (docs/design/09-radix-sort.md).
// A larger tile spreads each tile's fixed work (counting, scans, look-back, barriers) over
// more keys and leaves longer runs of each digit for the scatter; it must fit the 48 KiB of
// static shared memory (itself, and one row of counters per warp). Three blocks per SM keep
// two blocks working while a third waits in its look-back.
struct OnesweepTuning {
  static constexpr int threads_per_block = 256;
  static constexpr int keys_per_thread = 36;   // a tile of 9216 keys
  static constexpr int lookback_window = 4;    // predecessors' status words read at once
  static constexpr int min_blocks_per_sm = 3;  // caps the registers at 85
};

template <class Tuning>
struct TileShape {
  static constexpr int threads = Tuning::threads_per_block;
  static constexpr int warps = threads / warp_size;
  static constexpr int keys_per_thread = Tuning::keys_per_thread;
  static constexpr int warp_keys = keys_per_thread * warp_size;  // a warp's contiguous part of a tile
  static constexpr int tile_keys = warps * warp_keys;
  static_assert(threads % warp_size == 0, "whole warps only");
  static_assert(threads >= radix, "the per-digit phases give thread d digit d");
  static_assert((tile_keys + warps * radix + 2 * radix) * sizeof(u32) <= 48 * 1024,
                "the tile and the per-warp counters must fit in 48 KiB of static shared memory");
};

struct HistogramTuning {
  static constexpr int threads_per_block = 256;
  static constexpr int blocks_per_sm = 8;
};
static_assert(HistogramTuning::threads_per_block == radix, "the final scan gives thread d digit d");

// ---- temporary storage -------------------------------------------------------------------
// [ the other key buffer | digit counts [4][256] | counters | digit starts [4][256] |
//   look-back status A [tiles][256] | look-back status B [tiles][256] ]
// The passes alternate between the two status arrays, and each pass clears the one the next
// pass will use, so no call needs a memset of them (the histogram kernel clears A); one small
// memset clears the digit counts and the counters.
constexpr size_t alignment = 256;
constexpr size_t round_up(size_t bytes) { return (bytes + alignment - 1) / alignment * alignment; }

// The counters after the digit counts: one tile counter per pass, and the histogram blocks
// that have finished.
constexpr int counter_words = passes + 1;
constexpr int histogram_done_counter = passes;

template <class Tuning>
struct TempLayout {
  explicit TempLayout(size_t n)
      : tiles((n + TileShape<Tuning>::tile_keys - 1) / TileShape<Tuning>::tile_keys),
        keys_bytes(round_up(n * sizeof(u32))),
        counts_offset(keys_bytes),
        counters_offset(counts_offset + passes * radix * sizeof(u32)),
        starts_offset(round_up(counters_offset + counter_words * sizeof(u32))),
        status_bytes(round_up(tiles * radix * sizeof(u32))),
        status_offset{round_up(starts_offset + passes * radix * sizeof(u32)),
                      round_up(starts_offset + passes * radix * sizeof(u32)) + status_bytes},
        total_bytes(status_offset[1] + status_bytes) {}

  size_t tiles;
  size_t keys_bytes;
  size_t counts_offset;
  size_t counters_offset;
  size_t starts_offset;
  size_t status_bytes;
  size_t status_offset[2];
  size_t total_bytes;
};

// ---- look-back status ----------------------------------------------------------------------
// One 32-bit word per (tile, digit): [flag : 2 | value : 30]. Flag and value travel in one
// store, so a reader never sees a flag without its value. The value counts keys of tiles, not
// the digit's start, so it stays below 2^30: at most n + one tile of padding, and n <= 2^28.
constexpr u32 flag_shift = 30;
constexpr u32 value_mask = (1u << flag_shift) - 1;
enum StatusFlag : u32 { flag_not_ready = 0, flag_aggregate = 1, flag_prefix = 2 };

__device__ __forceinline__ u32 pack_status(u32 flag, u32 value) { return (flag << flag_shift) | value; }

// Relaxed at GPU scope: served by L2 (never a stale L1 line) and never hoisted out of a spin.
__device__ __forceinline__ u32 load_status(const u32* address) {
  u32 word;
  asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(word) : "l"(address) : "memory");
  return word;
}

__device__ __forceinline__ void store_status(u32* address, u32 word) {
  asm volatile("st.relaxed.gpu.global.u32 [%0], %1;" ::"l"(address), "r"(word) : "memory");
}

// Pass p's digit is byte p of the key: one byte permute (PRMT) picks it out, where a shift
// and a mask take two instructions. Bytes 1..3 of the result come from the zero operand.
__device__ __forceinline__ u32 digit_of(u32 key, int pass) { return __byte_perm(key, 0u, 0x4440u + u32(pass)); }

// ---- block-level helpers ----------------------------------------------------------------

__device__ __forceinline__ u32 warp_inclusive_scan(u32 x, int lane) {
#pragma unroll
  for (int distance = 1; distance < warp_size; distance <<= 1) {
    const u32 below = __shfl_up_sync(full_mask, x, distance);
    if (lane >= distance) x += below;
  }
  return x;
}

// Exclusive scan of one value per digit, held by threads 0..255 in digit order. Every thread
// of the block must call it (it contains a barrier); the others get 0.
__device__ u32 exclusive_scan_over_digits(u32 x, u32* s_warp_totals) {
  const int lane = threadIdx.x % warp_size;
  const int warp = threadIdx.x / warp_size;
  const bool holds_digit = threadIdx.x < radix;  // whole warps, so the shuffles stay full
  u32 inclusive = 0;
  if (holds_digit) {
    inclusive = warp_inclusive_scan(x, lane);
    if (lane == warp_size - 1) s_warp_totals[warp] = inclusive;
  }
  __syncthreads();
  if (!holds_digit) return 0;
  u32 before_warp = 0;
  for (int w = 0; w < warp; ++w) before_warp += s_warp_totals[w];
  return before_warp + inclusive - x;
}

// The lanes whose digit agrees with this lane's on the bit `bit_mask`: the ballot of that bit,
// inverted in the lanes where it is 0. In PTX because on sm_90 the C++ form (a select between
// the ballot and its complement) compiled to seven instructions per bit; this is a vote and a
// predicated not, and ptxas tests several bits of the digit at once (R2P). Measured: the
// whole sort faster by the largest of its steps (docs/design/09-radix-sort.md).
__device__ __forceinline__ unsigned lanes_agreeing_on(u32 digit, u32 bit_mask) {
  unsigned agree;
  asm("{\n\t"
      ".reg .pred bit_is_one;\n\t"
      "and.b32 %0, %1, %2;\n\t"
      "setp.ne.u32 bit_is_one, %0, 0;\n\t"
      "vote.sync.ballot.b32 %0, bit_is_one, 0xffffffff;\n\t"
      "@!bit_is_one not.b32 %0, %0;\n\t"
      "}"
      : "=r"(agree)
      : "r"(digit), "r"(bit_mask));
  return agree;
}

// The lanes of the warp whose `digit` equals this lane's: eight ballots, one per bit of the
// digit, each keeping the lanes that agree on that bit (the chapter's split, once per bit).
// (__match_any_sync does this in one instruction, but a slow one: the sort took 1.6-1.7x as long.)
__device__ __forceinline__ unsigned lanes_with_same_digit(u32 digit) {
  unsigned same = full_mask;
#pragma unroll
  for (int bit = 0; bit < radix_bits; ++bit) same &= lanes_agreeing_on(digit, 1u << bit);
  return same;
}

// atomicAdd(address, value) in the leader lane only, returning the old value there (0 in the
// others): one predicated instruction, where `if (leader)` costs a branch and two
// convergence-barrier instructions around it (and the compiler kept more registers).
__device__ __forceinline__ u32 leader_adds(bool leader, u32* address, u32 value) {
  u32 old = 0;
  asm volatile(
      "{\n\t"
      ".reg .pred is_leader;\n\t"
      "setp.ne.u32 is_leader, %1, 0;\n\t"
      "@is_leader atom.shared.add.u32 %0, [%2], %3;\n\t"
      "}"
      : "+r"(old)
      : "r"(u32(leader)), "r"(u32(__cvta_generic_to_shared(address))), "r"(value)
      : "memory");
  return old;
}

__device__ __forceinline__ unsigned lanes_up_to_me() {
  unsigned mask;
  asm("mov.u32 %0, %%lanemask_le;" : "=r"(mask));
  return mask;
}

// ---- kernel 1: all four digit histograms in one read, then each digit's start -----------

__device__ __forceinline__ void count_key(u32 (*s_counts)[radix], u32 key) {
#pragma unroll
  for (int pass = 0; pass < passes; ++pass) atomicAdd(&s_counts[pass][digit_of(key, pass)], 1u);
}

// Each block counts a grid-strided share of the keys in shared memory, then adds its counts
// to the global ones: a few hundred blocks, so a few hundred thousand global atomics at most.
// The last block to finish turns the counts into each digit's first output index. The blocks
// also clear the first pass's look-back status on the way.
__global__ void __launch_bounds__(HistogramTuning::threads_per_block)
    digit_histograms_kernel(const u32* __restrict__ keys, u32 n, u32* digit_counts, u32* counters,
                            u32* digit_starts, uint4* status_to_clear, u32 status_vectors) {
  __shared__ u32 s_counts[passes][radix];
  __shared__ u32 s_warp_totals[radix / warp_size];
  __shared__ bool s_is_last_block;
  for (int i = threadIdx.x; i < passes * radix; i += blockDim.x) s_counts[i / radix][i % radix] = 0;
  __syncthreads();

  const u32 thread = blockIdx.x * blockDim.x + threadIdx.x;
  const u32 stride = gridDim.x * blockDim.x;
  for (u32 v = thread; v < status_vectors; v += stride) status_to_clear[v] = make_uint4(0, 0, 0, 0);

  const u32 vectors = n / 4;  // d_keys is 256-byte aligned (the contract)
  const uint4* keys4 = reinterpret_cast<const uint4*>(keys);
  for (u32 v = thread; v < vectors; v += stride) {
    const uint4 four = keys4[v];
    count_key(s_counts, four.x);
    count_key(s_counts, four.y);
    count_key(s_counts, four.z);
    count_key(s_counts, four.w);
  }
  for (u32 i = 4 * vectors + thread; i < n; i += stride) count_key(s_counts, keys[i]);  // the rest
  __syncthreads();

  const int digit = threadIdx.x;
  for (int pass = 0; pass < passes; ++pass) {
    const u32 count = s_counts[pass][digit];
    if (count != 0) atomicAdd(&digit_counts[pass * radix + digit], count);
  }

  // The classic last-block pattern: each block's additions are visible before it counts
  // itself done, so the block that counts last sees every block's.
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) s_is_last_block = atomicAdd(&counters[histogram_done_counter], 1u) == gridDim.x - 1;
  __syncthreads();
  if (!s_is_last_block) return;
  __threadfence();
  for (int pass = 0; pass < passes; ++pass) {
    const u32 count = load_status(&digit_counts[pass * radix + digit]);  // from L2, like a status word
    digit_starts[pass * radix + digit] = exclusive_scan_over_digits(count, s_warp_totals);
    __syncthreads();  // s_warp_totals is reused by the next pass's scan
  }
}

// ---- kernel 2: one pass ------------------------------------------------------------------

// Tiles are numbered in the order blocks start (an atomic counter), not by blockIdx: that
// order guarantees that a tile's predecessors are already running when it waits for them.
__device__ __forceinline__ u32 take_tile(u32* tile_counter, u32* s_tile) {
  if (threadIdx.x == 0) *s_tile = atomicAdd(tile_counter, 1u);
  __syncthreads();
  return *s_tile;
}

// Warp w of a tile owns keys [w * warp_keys, (w + 1) * warp_keys) of it; its item j of lane l
// is key j * 32 + l of that part, so every load is a 128-byte contiguous access, and ranking
// item by item, lane by lane, visits the keys in their order. Keys past n read as 0xFFFFFFFF:
// digit 255 in every pass, ranked after every real key of the tile (they come last in tile
// order), so they fill the tile's last slots and are never stored.
template <int keys_per_thread>
__device__ __forceinline__ void load_keys(const u32* __restrict__ keys, u32 n, u32 warp_first, int lane,
                                          bool full_tile, u32 (&key)[keys_per_thread]) {
  if (full_tile) {
    const u32* lane_keys = keys + warp_first + lane;  // then constant offsets: no address arithmetic per key
#pragma unroll
    for (int j = 0; j < keys_per_thread; ++j) key[j] = lane_keys[j * warp_size];
  } else {
#pragma unroll
    for (int j = 0; j < keys_per_thread; ++j) {
      const u32 i = warp_first + j * warp_size + lane;
      key[j] = i < n ? keys[i] : 0xffffffffu;
    }
  }
}

// Ranks the warp's keys by digit, stably, and places each in the tile sorted by digit.
// `s_next_slot[d]` starts as the first slot of this warp's keys of digit d in the sorted tile;
// for each item, the peers (lanes holding the same digit) take consecutive slots in lane
// order, and their highest lane moves the digit's next slot on by their number: one shared
// atomic, which also returns the old value, then a shuffle hands it to the peers.
template <int keys_per_thread>
__device__ __forceinline__ void place_keys_in_tile(const u32 (&key)[keys_per_thread], int pass, int lane,
                                                   u32* s_next_slot, u32* s_tile_keys) {
  const unsigned up_to_me = lanes_up_to_me();
#pragma unroll
  for (int j = 0; j < keys_per_thread; ++j) {
    const u32 digit = digit_of(key[j], pass);
    const unsigned peers = lanes_with_same_digit(digit);
    const int last_peer = warp_size - 1 - __clz(peers);
    const u32 peers_up_to_me = __popc(peers & up_to_me);  // 1 for the lowest peer; all of them for the last
    u32 first_slot = leader_adds(lane == last_peer, &s_next_slot[digit], peers_up_to_me);
    first_slot = __shfl_sync(full_mask, first_slot, last_peer);
    s_tile_keys[first_slot + peers_up_to_me - 1] = key[j];
  }
}

// The sum of digit d's counts over all tiles before `tile`, walking back until a tile that
// has published its inclusive prefix. Tile 0 always does, so the walk ends; every tile before
// this one has started, so each one publishes in time. `window` predecessors are read at once,
// so a long walk over aggregates waits for one L2 round trip per window, not per tile.
template <int window>
__device__ u32 look_back(const u32* status, u32 tile, int digit) {
  u32 sum = 0;
  int nearest = int(tile) - 1;  // the nearest predecessor not added yet
  for (;;) {
    u32 word[window];
#pragma unroll
    for (int i = 0; i < window; ++i)
      word[i] = nearest - i >= 0 ? load_status(status + size_t(nearest - i) * radix + digit)
                                 : pack_status(flag_prefix, 0);  // never used: tile 0 ends every walk
    int added = 0;
    bool done = false;
#pragma unroll
    for (int i = 0; i < window; ++i) {
      const u32 flag = word[i] >> flag_shift;
      if (done || added < i || flag == flag_not_ready) continue;  // poll again from the first gap
      sum += word[i] & value_mask;
      added = i + 1;
      done = flag == flag_prefix;
    }
    if (done) return sum;
    nearest -= added;
  }
}

// One LSD pass over digit `pass` (bits 8 pass .. 8 pass + 7): keys_in -> keys_out, stable.
// `digit_starts` holds each digit's first output index; `status` has one zeroed word per
// (tile, digit), and this pass zeroes `next_status` (when given) for the next pass.
template <class Tuning>
__global__ void __launch_bounds__(Tuning::threads_per_block, Tuning::min_blocks_per_sm)
    onesweep_pass_kernel(const u32* __restrict__ keys_in, u32* __restrict__ keys_out, u32 n, int pass,
                         const u32* digit_starts, u32* tile_counter, u32* status, u32* next_status) {
  using Shape = TileShape<Tuning>;
  __shared__ u32 s_warp_slots[Shape::warps][radix];  // per warp: counts, then next free slots
  __shared__ u32 s_tile_keys[Shape::tile_keys];       // the tile, sorted by digit
  __shared__ int s_output_base[radix];                // output index of slot i of digit d: this + i
  __shared__ u32 s_warp_totals[radix / warp_size];
  __shared__ u32 s_tile;

  const int lane = threadIdx.x % warp_size;
  const int warp = threadIdx.x / warp_size;
  const int digit = threadIdx.x;  // in the per-digit phases, threads 0..255
  const bool holds_digit = digit < radix;
  for (int i = threadIdx.x; i < Shape::warps * radix; i += Shape::threads) s_warp_slots[i / radix][i % radix] = 0;

  const u32 tile = take_tile(tile_counter, &s_tile);  // its barrier also publishes the zeros
  const u32 tile_first = tile * Shape::tile_keys;
  const bool full_tile = n - tile_first >= u32(Shape::tile_keys);
  const u32 digit_start = holds_digit ? digit_starts[digit] : 0;  // its load overlaps the counting
  if (next_status != nullptr && holds_digit) next_status[size_t(tile) * radix + digit] = 0;

  u32 key[Shape::keys_per_thread];
  load_keys(keys_in, n, tile_first + warp * Shape::warp_keys, lane, full_tile, key);

  // Count first: each warp its own keys of each digit.
#pragma unroll
  for (int j = 0; j < Shape::keys_per_thread; ++j) atomicAdd(&s_warp_slots[warp][digit_of(key[j], pass)], 1u);
  __syncthreads();

  // Thread d: the tile's count of digit d, published at once (successors may be waiting on
  // it), and where each warp's keys of d start among the tile's keys of d.
  u32 tile_count = 0;
  if (holds_digit) {
#pragma unroll
    for (int w = 0; w < Shape::warps; ++w) {
      const u32 count = s_warp_slots[w][digit];
      s_warp_slots[w][digit] = tile_count;
      tile_count += count;
    }
    store_status(status + size_t(tile) * radix + digit,  // tile 0's count is its inclusive prefix
                 pack_status(tile == 0 ? flag_prefix : flag_aggregate, tile_count));
  }
  const u32 tile_start = exclusive_scan_over_digits(tile_count, s_warp_totals);  // digit d's first slot
  if (holds_digit) {
#pragma unroll
    for (int w = 0; w < Shape::warps; ++w) s_warp_slots[w][digit] += tile_start;
  }
  __syncthreads();

  place_keys_in_tile(key, pass, lane, s_warp_slots[warp], s_tile_keys);

  // Where digit d's keys of this tile go in the output: the digit's start plus its counts in
  // all earlier tiles.
  if (holds_digit) {
    const u32 before = tile == 0 ? 0 : look_back<Tuning::lookback_window>(status, tile, digit);
    if (tile != 0) store_status(status + size_t(tile) * radix + digit, pack_status(flag_prefix, before + tile_count));
    s_output_base[digit] = int(digit_start + before) - int(tile_start);  // may be negative: slots start at 0
  }
  __syncthreads();

  // Slot i of the sorted tile goes to s_output_base[its digit] + i. Neighbouring slots hold
  // mostly the same digit, so neighbouring threads write neighbours.
  const u32 tile_valid = full_tile ? u32(Shape::tile_keys) : n - tile_first;
  u32* thread_out = keys_out + threadIdx.x;  // then slot j * threads is a constant offset
#pragma unroll
  for (int j = 0; j < Shape::keys_per_thread; ++j) {
    const u32 slot = j * Shape::threads + threadIdx.x;
    if (full_tile || slot < tile_valid) {
      const u32 k = s_tile_keys[slot];
      thread_out[s_output_base[digit_of(k, pass)] + j * Shape::threads] = k;
    }
  }
}

// ---- host side ---------------------------------------------------------------------------

int multiprocessor_count() {
  int device = 0, sms = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess || sms <= 0)
    sms = 1;
  return sms;
}

unsigned histogram_blocks(size_t n, int sms) {
  const size_t per_block = size_t(HistogramTuning::threads_per_block) * 4;  // one uint4 per thread
  const size_t wanted = (n + per_block - 1) / per_block;
  const size_t most = size_t(sms) * HistogramTuning::blocks_per_sm;
  return unsigned(wanted < most ? wanted : most);
}

// The whole sort, for any pass-kernel shape (the experiments that timed other shapes:
// docs/design/09-radix-sort.md).
template <class Tuning>
void onesweep_radix_sort(u32* d_keys, size_t n, void* d_temp, size_t temp_bytes, cudaStream_t stream) {
  if (n <= 1) return;  // already sorted
  const TempLayout<Tuning> layout(n);
  if (d_temp == nullptr || temp_bytes < layout.total_bytes) return;  // not what the contract promises
  char* temp = static_cast<char*>(d_temp);
  u32* other_keys = reinterpret_cast<u32*>(temp);
  u32* digit_counts = reinterpret_cast<u32*>(temp + layout.counts_offset);
  u32* counters = reinterpret_cast<u32*>(temp + layout.counters_offset);
  u32* digit_starts = reinterpret_cast<u32*>(temp + layout.starts_offset);
  u32* status[2] = {reinterpret_cast<u32*>(temp + layout.status_offset[0]),
                    reinterpret_cast<u32*>(temp + layout.status_offset[1])};
  const u32 keys = u32(n);

  // The digit counts and the counters follow each other: one memset clears both.
  if (cudaMemsetAsync(digit_counts, 0, (passes * radix + counter_words) * sizeof(u32), stream) != cudaSuccess)
    return;  // the error stays visible to the caller
  digit_histograms_kernel<<<histogram_blocks(n, multiprocessor_count()), HistogramTuning::threads_per_block, 0,
                            stream>>>(d_keys, keys, digit_counts, counters, digit_starts,
                                      reinterpret_cast<uint4*>(status[0]), u32(layout.status_bytes / sizeof(uint4)));
  u32* from = d_keys;
  u32* to = other_keys;
  for (int pass = 0; pass < passes; ++pass) {
    u32* next_status = pass + 1 < passes ? status[(pass + 1) % 2] : nullptr;
    onesweep_pass_kernel<Tuning><<<unsigned(layout.tiles), TileShape<Tuning>::threads, 0, stream>>>(
        from, to, keys, pass, digit_starts + pass * radix, counters + pass, status[pass % 2], next_status);
    u32* swap = from;
    from = to;
    to = swap;
  }
}

}  // namespace

extern "C" size_t radix_sort_temp_bytes(size_t n) { return TempLayout<OnesweepTuning>(n).total_bytes; }

extern "C" void radix_sort(uint32_t* d_keys, size_t n, void* d_temp, size_t temp_bytes, cudaStream_t stream) {
  onesweep_radix_sort<OnesweepTuning>(d_keys, n, d_temp, temp_bytes, stream);
}
