// Issue 22 experiment: lab 09's previous reference (3840-key tiles, rank before count), kept to
// time beside the new one: the same code inside namespace previous_reference, its two
// functions no longer extern "C". It was:
//
// Lab 09 reference: an LSD radix sort of 32-bit keys with 8-bit digits, in the one-sweep
// style of Adinets and Merrill ("Onesweep: A Faster Least Significant Digit Radix Sort for
// GPUs", 2022), the method behind cub::DeviceRadixSort on recent GPUs, written out without CUB.
//
// 1. One histogram kernel reads every key once and counts all four digits at the same time:
//    four histograms of 256 bins.
// 2. Four passes, one per digit, from the lowest to the highest. Each pass is one kernel that
//    reads every key once and writes it once, to the other buffer. A block takes the next
//    tile of 3840 keys, ranks them inside the tile (stable: equal digits keep their order),
//    and counts the tile's keys of each digit. Where a digit's keys of this tile go in the
//    output is the digit's start (the scanned histogram) plus the same digit's counts in all
//    earlier tiles: the block learns that sum by a decoupled look-back over the earlier
//    tiles' published counts, one digit per thread, as a single-pass scan does with sums.
//    Then it scatters the tile: first into shared memory, sorted by digit, then to global
//    memory, where consecutive threads write mostly consecutive addresses.
//
// Memory traffic: 4 bytes read for the histogram, then 8 bytes (read and write) per pass per
// key: 36 bytes per key, plus clearing the look-back status (about 1 byte per key per pass).
#include "../../../labs/09-radix-sort/sort.h"

#include <cstdint>

namespace previous_reference {

using u32 = uint32_t;

constexpr int radix_bits = 8;
constexpr int radix = 1 << radix_bits;        // 256 digit values
constexpr int passes = 32 / radix_bits;       // 4: an even count, so the result ends in d_keys
constexpr int warp_size = 32;
constexpr unsigned full_mask = 0xffffffffu;
static_assert(passes % 2 == 0, "the passes alternate buffers: an even count leaves the keys in d_keys");

// One thread per digit value in the phases that work per digit, and 15 keys per thread
// (CUB's choice for 4-byte keys on recent GPUs is in the same range).
struct OnesweepTuning {
  static constexpr int threads_per_block = radix;
  static constexpr int keys_per_thread = 15;
};
constexpr int onesweep_threads = OnesweepTuning::threads_per_block;
constexpr int keys_per_thread = OnesweepTuning::keys_per_thread;
constexpr int onesweep_warps = onesweep_threads / warp_size;
constexpr int warp_keys = keys_per_thread * warp_size;  // a warp's contiguous part of a tile
constexpr int tile_keys = onesweep_warps * warp_keys;   // 3840
static_assert(onesweep_threads == radix, "the per-digit phases give thread d digit d");

struct HistogramTuning {
  static constexpr int threads_per_block = 256;
  static constexpr int blocks_per_sm = 8;
};

// ---- temporary storage -------------------------------------------------------------------
// [ the other key buffer | digit counts [4][256] | tile counters [4] | status [4][tiles][256] ]
// Everything after the key buffer must start at zero, and it is one contiguous range, so one
// cudaMemsetAsync per call clears it.
constexpr size_t alignment = 256;
constexpr size_t round_up(size_t bytes) { return (bytes + alignment - 1) / alignment * alignment; }

struct TempLayout {
  explicit TempLayout(size_t n)
      : tiles((n + tile_keys - 1) / tile_keys),
        keys_bytes(round_up(n * sizeof(u32))),
        counts_offset(keys_bytes),
        counters_offset(counts_offset + round_up(passes * radix * sizeof(u32))),
        status_offset(counters_offset + round_up(passes * sizeof(u32))),
        total_bytes(status_offset + round_up(passes * tiles * radix * sizeof(u32))) {}

  size_t tiles;
  size_t keys_bytes;
  size_t counts_offset;
  size_t counters_offset;
  size_t status_offset;
  size_t total_bytes;
};

// ---- look-back status ----------------------------------------------------------------------
// One 32-bit word per (pass, tile, digit): [flag : 2 | value : 30]. Flag and value travel in
// one store, so a reader never sees a flag without its value. Values stay below 2^30: a count
// is at most n + one tile of padding, and n <= 2^28.
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

__device__ __forceinline__ u32 digit_of(u32 key, int shift) { return (key >> shift) & (radix - 1); }

// ---- kernel 1: all four digit histograms in one read ------------------------------------

__device__ __forceinline__ void count_key(u32 (*s_counts)[radix], u32 key) {
#pragma unroll
  for (int pass = 0; pass < passes; ++pass) atomicAdd(&s_counts[pass][digit_of(key, pass * radix_bits)], 1u);
}

// Each block counts a grid-strided share of the keys in shared memory, then adds its counts
// to the global ones: a few hundred blocks, so a few hundred thousand global atomics at most.
__global__ void __launch_bounds__(HistogramTuning::threads_per_block)
    digit_histograms_kernel(const u32* keys, size_t n, u32* digit_counts) {
  __shared__ u32 s_counts[passes][radix];
  for (int i = threadIdx.x; i < passes * radix; i += blockDim.x) s_counts[i / radix][i % radix] = 0;
  __syncthreads();

  const size_t thread = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  const bool vector_aligned = reinterpret_cast<uintptr_t>(keys) % sizeof(uint4) == 0;
  const size_t vectors = vector_aligned ? n / 4 : 0;
  const uint4* keys4 = reinterpret_cast<const uint4*>(keys);
  for (size_t v = thread; v < vectors; v += stride) {
    const uint4 four = keys4[v];
    count_key(s_counts, four.x);
    count_key(s_counts, four.y);
    count_key(s_counts, four.z);
    count_key(s_counts, four.w);
  }
  for (size_t i = 4 * vectors + thread; i < n; i += stride) count_key(s_counts, keys[i]);  // the rest
  __syncthreads();

  for (int i = threadIdx.x; i < passes * radix; i += blockDim.x) {
    const u32 count = s_counts[i / radix][i % radix];
    if (count != 0) atomicAdd(&digit_counts[i], count);
  }
}

// ---- block-level helpers (256 threads) --------------------------------------------------

__device__ __forceinline__ u32 warp_inclusive_scan(u32 x, int lane) {
#pragma unroll
  for (int distance = 1; distance < warp_size; distance <<= 1) {
    const u32 below = __shfl_up_sync(full_mask, x, distance);
    if (lane >= distance) x += below;
  }
  return x;
}

// Exclusive scan of one value per thread, in thread order. Every thread of the block must call
// it; it ends with a barrier, so `s_warp_totals` may be reused at once.
__device__ u32 block_exclusive_scan(u32 x, u32* s_warp_totals) {
  const int lane = threadIdx.x % warp_size;
  const int warp = threadIdx.x / warp_size;
  const u32 inclusive = warp_inclusive_scan(x, lane);
  if (lane == warp_size - 1) s_warp_totals[warp] = inclusive;
  __syncthreads();
  u32 before_warp = 0;
  for (int w = 0; w < warp; ++w) before_warp += s_warp_totals[w];
  __syncthreads();
  return before_warp + inclusive - x;
}

// The lanes of the warp whose `digit` equals this lane's: eight ballots, one per bit of the
// digit, each keeping the lanes that agree on that bit (the chapter's split, once per bit).
__device__ __forceinline__ unsigned lanes_with_same_digit(u32 digit) {
  unsigned same = full_mask;
#pragma unroll
  for (int bit = 0; bit < radix_bits; ++bit) {
    const bool is_one = (digit >> bit) & 1u;
    const unsigned ones = __ballot_sync(full_mask, is_one);
    same &= is_one ? ones : ~ones;
  }
  return same;
}

// ---- kernel 2: one pass ------------------------------------------------------------------

// Tiles are numbered in the order blocks start (an atomic counter), not by blockIdx: that
// order guarantees that a tile's predecessors are already running when it waits for them.
__device__ __forceinline__ int take_tile(u32* tile_counter, u32* s_tile) {
  if (threadIdx.x == 0) *s_tile = atomicAdd(tile_counter, 1u);
  __syncthreads();
  return int(*s_tile);
}

// Warp w of a tile owns keys [w * warp_keys, (w + 1) * warp_keys) of it; its item j of lane l
// is key j * 32 + l of that part, so every load is a 128-byte contiguous access. Keys past n
// read as 0xFFFFFFFF: digit 255 in every pass, ranked after every real key of the tile (they
// come last in tile order), so they fill the tile's last slots and are never stored.
__device__ __forceinline__ void load_keys(const u32* keys, size_t n, size_t warp_first, int lane,
                                          u32 (&key)[keys_per_thread]) {
#pragma unroll
  for (int j = 0; j < keys_per_thread; ++j) {
    const size_t i = warp_first + size_t(j) * warp_size + lane;
    key[j] = i < n ? keys[i] : 0xffffffffu;
  }
}

// Ranks the warp's keys by digit, stably: rank[j] = how many keys of the same digit come
// before key j in the warp's part of the tile. Leaves the warp's digit counts in s_counts.
__device__ __forceinline__ void rank_keys_in_warp(const u32 (&key)[keys_per_thread], int shift, int lane,
                                                  u32* s_counts, u32 (&rank)[keys_per_thread]) {
  const unsigned below = (1u << lane) - 1u;
#pragma unroll
  for (int j = 0; j < keys_per_thread; ++j) {
    const u32 digit = digit_of(key[j], shift);
    const unsigned peers = lanes_with_same_digit(digit);
    const u32 before = s_counts[digit];  // same-digit keys of items 0..j-1
    __syncwarp();                        // every peer has read it before the leader moves it on
    const u32 peers_below = __popc(peers & below);
    if (peers_below == 0) s_counts[digit] = before + __popc(peers);  // the lowest peer leads
    __syncwarp();
    rank[j] = before + peers_below;
  }
}

// Digit d's exclusive prefix over all tiles before `tile`: the sum of their counts of d,
// walking back until a tile that has published its inclusive prefix. Tile 0 always does, so
// the walk ends; every tile before this one has started, so each one publishes in time.
__device__ u32 look_back(const u32* status, int tile, int digit) {
  u32 prefix = 0;
  for (int predecessor = tile - 1;;) {
    const u32 word = load_status(status + size_t(predecessor) * radix + digit);
    const u32 flag = word >> flag_shift;
    if (flag == flag_not_ready) continue;  // spin: it has not counted its tile yet
    prefix += word & value_mask;
    if (flag == flag_prefix) return prefix;
    --predecessor;
  }
}

// One LSD pass over the digit at `shift`: keys_in -> keys_out, stable. `digit_counts` holds
// this digit's histogram over all keys; `status` has one zeroed word per (tile, digit).
__global__ void __launch_bounds__(onesweep_threads)
    onesweep_pass_kernel(const u32* keys_in, u32* keys_out, size_t n, int shift, const u32* digit_counts,
                         u32* tile_counter, u32* status) {
  __shared__ u32 s_warp_counts[onesweep_warps][radix];  // per warp: counts, then start offsets
  __shared__ u32 s_tile_keys[tile_keys];                 // the tile, sorted by digit
  __shared__ u32 s_global_minus_local[radix];            // output index of a key = this + its slot
  __shared__ u32 s_warp_totals[onesweep_warps];
  __shared__ u32 s_tile;

  const int lane = threadIdx.x % warp_size;
  const int warp = threadIdx.x / warp_size;
  const int digit = threadIdx.x;  // in the per-digit phases
#pragma unroll
  for (int w = 0; w < onesweep_warps; ++w) s_warp_counts[w][digit] = 0;

  const int tile = take_tile(tile_counter, &s_tile);  // its barrier also publishes the zeros
  const size_t tile_first = size_t(tile) * tile_keys;
  const int tile_valid = int(min(size_t(tile_keys), n - tile_first));

  u32 key[keys_per_thread], rank[keys_per_thread];
  load_keys(keys_in, n, tile_first + size_t(warp) * warp_keys, lane, key);
  rank_keys_in_warp(key, shift, lane, s_warp_counts[warp], rank);
  __syncthreads();

  // Thread d: the tile's count of digit d, and where each warp's keys of d start among them.
  u32 tile_count = 0;
#pragma unroll
  for (int w = 0; w < onesweep_warps; ++w) {
    const u32 count = s_warp_counts[w][digit];
    s_warp_counts[w][digit] = tile_count;
    tile_count += count;
  }
  u32* my_status = status + size_t(tile) * radix + digit;
  if (tile > 0) store_status(my_status, pack_status(flag_aggregate, tile_count));  // at once: others wait on it

  // Where digit d's keys start in the tile sorted by digit.
  const u32 tile_start = block_exclusive_scan(tile_count, s_warp_totals);
#pragma unroll
  for (int w = 0; w < onesweep_warps; ++w) s_warp_counts[w][digit] += tile_start;
  __syncthreads();

  // Local scatter: the tile, stably sorted by digit, into shared memory.
#pragma unroll
  for (int j = 0; j < keys_per_thread; ++j) s_tile_keys[s_warp_counts[warp][digit_of(key[j], shift)] + rank[j]] = key[j];

  // Where digit d's keys of this tile go in the output: the digit's start over all keys plus
  // the counts of d in all earlier tiles.
  u32 global_start;
  if (tile == 0) {
    global_start = block_exclusive_scan(digit_counts[digit], s_warp_totals);
  } else {
    global_start = look_back(status, tile, digit);
  }
  store_status(my_status, pack_status(flag_prefix, global_start + tile_count));
  s_global_minus_local[digit] = global_start - tile_start;  // wraps, and unwraps when the slot is added
  __syncthreads();

  // Global scatter: slot i of the sorted tile goes to s_global_minus_local[its digit] + i.
  // Neighbouring slots hold mostly the same digit, so neighbouring threads write neighbours.
  for (int i = threadIdx.x; i < tile_valid; i += onesweep_threads) {
    const u32 k = s_tile_keys[i];
    keys_out[s_global_minus_local[digit_of(k, shift)] + u32(i)] = k;
  }
}

// ---- host side ---------------------------------------------------------------------------

int histogram_blocks(size_t n) {
  int device = 0, sms = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess || sms <= 0)
    sms = 1;
  const size_t per_block = size_t(HistogramTuning::threads_per_block) * 4;  // one uint4 per thread
  const size_t wanted = (n + per_block - 1) / per_block;
  const size_t most = size_t(sms) * HistogramTuning::blocks_per_sm;
  return int(wanted < most ? wanted : most);
}


size_t radix_sort_temp_bytes(size_t n) { return TempLayout(n).total_bytes; }

void radix_sort(uint32_t* d_keys, size_t n, void* d_temp, size_t temp_bytes, cudaStream_t stream) {
  if (n <= 1) return;  // already sorted
  const TempLayout layout(n);
  if (d_temp == nullptr || temp_bytes < layout.total_bytes) return;  // not what the contract promises
  char* temp = static_cast<char*>(d_temp);
  u32* other_keys = reinterpret_cast<u32*>(temp);
  u32* digit_counts = reinterpret_cast<u32*>(temp + layout.counts_offset);
  u32* tile_counters = reinterpret_cast<u32*>(temp + layout.counters_offset);
  u32* status = reinterpret_cast<u32*>(temp + layout.status_offset);

  if (cudaMemsetAsync(temp + layout.counts_offset, 0, layout.total_bytes - layout.counts_offset, stream) != cudaSuccess)
    return;  // the error stays visible to the caller
  digit_histograms_kernel<<<histogram_blocks(n), HistogramTuning::threads_per_block, 0, stream>>>(d_keys, n,
                                                                                                   digit_counts);
  u32* from = d_keys;
  u32* to = other_keys;
  for (int pass = 0; pass < passes; ++pass) {
    onesweep_pass_kernel<<<unsigned(layout.tiles), onesweep_threads, 0, stream>>>(
        from, to, n, pass * radix_bits, digit_counts + pass * radix, tile_counters + pass,
        status + size_t(pass) * layout.tiles * radix);
    u32* swap = from;
    from = to;
    to = swap;
  }
}

}  // namespace previous_reference
