// Lab 10 reference: a multi-way quicksort (samplesort), its stages chained and its oversized
// buckets sorted by kernels launched from the device (CDP2).
//
// A two-way quicksort moves every key once per level, about log2(n / leaf) levels. Taking
// S - 1 pivots at once (the splitters) cuts a segment into S parts in one pass, so that one
// partition and one block sort per part finish 2^24 keys:
//
//   1. sample_splitters_kernel (one block): sorts a sample of the segment's keys in shared
//      memory and keeps every (sample / S)-th key as a splitter (for the whole array, a
//      gather_sample_kernel of many blocks fetches the sample first);
//   2. bucket_histogram_kernel: each block counts its chunk's keys per bucket (a binary search
//      of the splitters in shared memory) and claims its room in each bucket with one atomicAdd;
//   3. bucket_scatter_kernel: each block moves its chunk's keys to the other buffer, a tile at
//      a time, grouped by bucket in shared memory first so that a bucket's keys leave as one
//      coalesced run;
//   4. bucket_sort_kernel: a block per bucket sorts it in shared memory and writes it to
//      d_keys: one counting pass spreads its keys over about as many bins as keys, by their
//      leading bits between the bucket's two splitters, and each thread sorts a run of bins by
//      insertion (keys bunched into a few bins take LSD radix passes instead). A bucket too
//      large for one block is a segment of its own: the block launches stage 1 on it from the
//      device, whose grid launches stages 2-4 into its tail stream (each starts when the one
//      before it, with all it launched, is complete), and the sort recurses. Further blocks
//      write each splitter over its bucket of equal keys.
//
// The host launches the whole array's stages on the caller's stream: a launch from the
// device takes tens of microseconds longer to start its grid than one queued from the host
// (docs/design/10-quicksort.md), and the whole array's stages run on every call, where a child
// sort is rare (the sample keeps buckets near their mean size).
//
// The pivots split three ways, as a two-way quicksort's should: a key equal to a splitter goes
// to that splitter's own bucket, which needs no sort. Sorted, reversed and organ-pipe inputs
// split as evenly as random ones (the sample is spread over the whole segment), and inputs of
// few distinct values put almost every key into equal buckets.
//
// Keys move between d_keys and a scratch buffer: the scatter reads a segment's buffer and
// writes the other; the block sorts and the fills always write d_keys. n of at most one block
// sort's capacity is sorted by one block, with none of the stages.
#include "quicksort.h"

#include <algorithm>
#include <climits>

// A bucket larger than this is sorted by a child sort even if it fits in shared memory. A test
// build lowers it, so that the device-side launches and the fallback run on every input.
#ifndef QUICKSORT_BLOCK_SORT_MAX
#define QUICKSORT_BLOCK_SORT_MAX UINT_MAX
#endif

namespace {

constexpr unsigned full_mask = 0xffffffffu;
constexpr int radix_bits = 8;
constexpr unsigned radix_digits = 1u << radix_bits;
constexpr unsigned oversample = 32;       // sampled keys per bucket (up to a block sort's capacity)
constexpr int histogram_items = 8;        // keys a thread loads at once while counting
constexpr unsigned max_chunks = 256;      // blocks of the histogram and the scatter
constexpr unsigned fill_keys = 1u << 16;  // a fill block's stretch of the segment
constexpr int max_depth = 3;              // child sorts nest at most this deep; a bucket still too
                                          // large is sorted by its own block in global memory

__host__ __device__ constexpr unsigned smaller(unsigned a, unsigned b) { return a < b ? a : b; }
__host__ __device__ constexpr unsigned larger(unsigned a, unsigned b) { return a < b ? b : a; }
__host__ __device__ constexpr unsigned divide_up(unsigned a, unsigned b) { return (a + b - 1) / b; }

// The sort's shape, from the shared memory a block may have. Wide (the H100's 227 KB): a block
// sort of 24 keys a thread in two buffers, one block per SM, and buckets of 8K keys on average,
// so that the largest of 2048 stays far below the 24K a block sorts. Compact (64 KB, every GPU
// the lab supports): 5K keys a block, and 2K-key buckets.
template <int Threads, int SortItems, unsigned TargetBucket, unsigned MaxSplitters, int TileItems>
struct Tuning {
  static constexpr int threads = Threads;
  static constexpr int warps = Threads / 32;
  static constexpr int sort_items = SortItems;
  static constexpr unsigned sort_capacity = Threads * SortItems;
  static constexpr unsigned block_sort_max = smaller(sort_capacity, QUICKSORT_BLOCK_SORT_MAX);
  static constexpr unsigned counter_stride = warps + 1;  // a digit's per-warp counters, padded so a
                                                         // warp's lanes hit different banks
  static constexpr unsigned counter_words = radix_digits * counter_stride;
  static constexpr unsigned target_bucket = TargetBucket;
  static constexpr unsigned max_splitters = MaxSplitters;  // S; 2S buckets with the equal ones
  static constexpr int tile_items = TileItems;             // keys a thread scatters per tile
  static constexpr unsigned tile_keys = Threads * TileItems;
  static_assert(2 * MaxSplitters <= 65536 && Threads * TileItems <= 65536,
                "the scatter packs a bucket and a rank in 16 bits each");
};
using WideTuning = Tuning<1024, 24, 8192, 4096, 16>;
using CompactTuning = Tuning<512, 10, 2048, 1024, 8>;

// ---- segments and their bookkeeping ------------------------------------------------------

struct Control {
  unsigned pool_used;  // words of the pool handed to child sorts
};

struct Buffers {
  uint32_t* keys;     // d_keys: where every sorted bucket ends
  uint32_t* scratch;  // n keys of d_temp
  Control* control;
  unsigned* pool;     // the child sorts' bookkeeping, carved out as they start
  unsigned pool_words;
  unsigned sms;
};

// Keys [begin, begin + size) of d_keys (in_keys) or of the scratch buffer.
struct Segment {
  unsigned begin;
  unsigned size;
  int in_keys;
  int depth;  // 0: the whole array; a bucket is one deeper than the segment it came from
};

struct Plan {
  unsigned splitters;   // S: a power of two, the last one UINT_MAX
  unsigned buckets;     // 2S: open bucket 2i below splitter i, equal bucket 2i + 1
  unsigned sample;      // keys sorted to pick the splitters
  unsigned chunks;      // blocks of the histogram and the scatter
  unsigned chunk_keys;  // keys per chunk (the last may have fewer)
};

struct Meta {
  uint32_t* splitters;      // S
  unsigned* totals;         // 2S: keys per bucket (the histogram's claims)
  unsigned* chunk_offsets;  // chunks x 2S: where chunk g's keys begin inside bucket b
  unsigned* bucket_start;   // 2S + 1: exclusive prefix of the totals, then the size
};

struct SegmentSort {
  Buffers buffers;
  Segment segment;
  Plan plan;
  Meta meta;
  int chained;  // a child sort: stage 1 gathers its own sample and launches the other stages;
                // else the host launched the sample's gather and every stage
};

template <class T>
__host__ __device__ Plan plan_for(unsigned size, unsigned sms) {
  Plan p{};
  p.splitters = 2;
  while (p.splitters < T::max_splitters && p.splitters * T::target_bucket < size) p.splitters *= 2;
  p.buckets = 2 * p.splitters;
  p.sample = smaller(smaller(T::sort_capacity, oversample * p.splitters), size);
  p.chunks = larger(1u, smaller(smaller(sms, max_chunks), divide_up(size, T::tile_keys)));
  p.chunk_keys = divide_up(size, p.chunks);
  return p;
}

__host__ __device__ unsigned meta_words(const Plan& p) {
  return p.splitters + p.buckets + p.chunks * p.buckets + p.buckets + 1;
}

__host__ __device__ Meta carve_meta(unsigned* words, const Plan& p) {
  Meta m;
  m.splitters = words;
  m.totals = words + p.splitters;
  m.chunk_offsets = m.totals + p.buckets;
  m.bucket_start = m.chunk_offsets + p.chunks * p.buckets;
  return m;
}

__device__ __forceinline__ uint32_t* keys_of(const Buffers& b, const Segment& s) {
  return (s.in_keys ? b.keys : b.scratch) + s.begin;
}
__device__ __forceinline__ uint32_t* other_keys_of(const Buffers& b, const Segment& s) {
  return (s.in_keys ? b.scratch : b.keys) + s.begin;
}

// ---- block-wide building blocks ----------------------------------------------------------

template <class S>
__device__ __forceinline__ S* shared_storage() {
  extern __shared__ uint4 shared_words[];
  return reinterpret_cast<S*>(shared_words);
}

__device__ __forceinline__ unsigned lanes_below() { return (1u << (threadIdx.x % 32)) - 1u; }

// Exclusive prefix sum over the block's threads, one value each; `total` gets the sum.
// warp_sums: T::warps words of shared memory.
template <class T>
__device__ unsigned block_exclusive_scan(unsigned value, unsigned* warp_sums, unsigned& total) {
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  unsigned inclusive = value;
  for (int d = 1; d < 32; d <<= 1) {
    const unsigned up = __shfl_up_sync(full_mask, inclusive, d);
    if (lane >= d) inclusive += up;
  }
  if (lane == 31) warp_sums[warp] = inclusive;
  __syncthreads();
  if (warp == 0) {  // the warps' sums, scanned by one warp
    unsigned sum = lane < T::warps ? warp_sums[lane] : 0u;
    for (int d = 1; d < 32; d <<= 1) {
      const unsigned up = __shfl_up_sync(full_mask, sum, d);
      if (lane >= d) sum += up;
    }
    if (lane < T::warps) warp_sums[lane] = sum;
  }
  __syncthreads();
  total = warp_sums[T::warps - 1];
  const unsigned before = warp == 0 ? 0u : warp_sums[warp - 1];
  __syncthreads();  // warp_sums may be written again by the next scan
  return before + inclusive - value;
}

// Replaces counts[0, length) in shared memory with its exclusive prefix sums; returns the total.
// Each thread takes a run of consecutive counts.
template <class T>
__device__ unsigned block_scan_array(unsigned* counts, unsigned length, unsigned* warp_sums) {
  const unsigned per_thread = divide_up(length, T::threads);
  const unsigned first = min(length, threadIdx.x * per_thread);
  const unsigned last = min(length, first + per_thread);
  unsigned sum = 0;
  for (unsigned i = first; i < last; ++i) sum += counts[i];
  unsigned total = 0;
  unsigned running = block_exclusive_scan<T>(sum, warp_sums, total);
  for (unsigned i = first; i < last; ++i) {
    const unsigned count = counts[i];
    counts[i] = running;
    running += count;
  }
  __syncthreads();
  return total;
}

// Each lane of `active` adds one to counts[bucket] and gets the count before it: its slot
// among the bucket's keys, in no particular order. A warp whose keys share one bucket (sorted
// input, or few distinct values) adds with one atomic, since 32 atomics on one address queue
// one behind another; otherwise each lane adds its own.
__device__ __forceinline__ unsigned claim_slot(unsigned* counts, unsigned bucket, unsigned active) {
  const int leader = __ffs(active) - 1;
  if (__all_sync(active, bucket == __shfl_sync(active, bucket, leader))) {
    unsigned before = 0;
    if (int(threadIdx.x % 32) == leader) before = atomicAdd(&counts[bucket], unsigned(__popc(active)));
    return __shfl_sync(active, before, leader) + __popc(active & lanes_below());
  }
  return atomicAdd(&counts[bucket], 1u);
}

// The lanes of `active` whose digit equals this lane's, by one ballot per digit bit: the cost
// of __match_any_sync grows with the number of distinct values among the lanes, and a radix
// pass over random keys gives a warp about 30 of them.
__device__ __forceinline__ unsigned lanes_with_digit(unsigned digit, unsigned active) {
  unsigned peers = active;
#pragma unroll
  for (int b = 0; b < radix_bits; ++b) {
    const bool one = (digit >> b) & 1u;
    const unsigned ones = __ballot_sync(active, one);
    peers &= one ? ones : ~ones;
  }
  return peers;
}

// Where a key falls among the splitters, in shared memory. Open bucket 2i holds the keys
// strictly between splitters i - 1 and i, equal bucket 2i + 1 the keys equal to splitter i
// (with repeated splitters the first copy takes the equal keys, and the open buckets between
// the copies stay empty). A binary search over thousands of splitters is a dozen dependent
// shared-memory reads per key, on conflicting banks; an index by the key's leading bits
// (relative to the first splitter) narrows it to the few splitters that share them, mostly
// none or one.
constexpr int index_bits = 12;
constexpr unsigned index_size = 1u << index_bits;
constexpr unsigned index_words = (index_size + 2) / 2;  // index_size + 1 16-bit entries

struct SplitterIndex {
  const uint32_t* splitters;  // `count` of them, a power of two, the last UINT_MAX
  const uint16_t* first;      // index_size + 1: splitters below each leading-bits value
  unsigned count;
  uint32_t low;               // the first splitter
  int shift;                  // key - low >> shift: the leading bits
};

// The splitters below `key` (the last one never is), by the branchless binary search.
__device__ __forceinline__ unsigned splitters_below(const uint32_t* splitters, unsigned count, uint32_t key) {
  unsigned below = 0;
  for (unsigned step = count / 2; step > 0; step /= 2)
    if (splitters[below + step - 1] < key) below += step;
  return below;
}

// Builds the index over splitters already in shared memory (the whole block; ends with a
// barrier).
template <class T>
__device__ SplitterIndex build_splitter_index(const uint32_t* splitters, unsigned count, uint16_t* first) {
  const uint32_t low = splitters[0];
  const uint32_t span = splitters[count - 2] - low;  // to the last real splitter
  const int shift = max(0, 32 - __clz(span) - index_bits);
  for (unsigned p = threadIdx.x; p <= index_size; p += T::threads) {
    const bool inside = p < index_size && (p << shift) <= span;
    first[p] = uint16_t(inside ? splitters_below(splitters, count, low + (p << shift)) : count - 1);
  }
  __syncthreads();
  return SplitterIndex{splitters, first, count, low, shift};
}

__device__ __forceinline__ unsigned bucket_of(const SplitterIndex& x, uint32_t key) {
  unsigned below = 0;
  if (key >= x.low) {
    // Splitters below the key are at least those below its leading bits' first value, and at
    // most those below the next one's.
    const unsigned p = (key - x.low) >> x.shift;
    unsigned lo = p < index_size ? x.first[p] : x.count - 1;
    unsigned hi = p < index_size ? x.first[p + 1] : x.count - 1;
    while (lo < hi) {
      const unsigned middle = (lo + hi) / 2;
      if (x.splitters[middle] < key) lo = middle + 1; else hi = middle;
    }
    below = lo;
  }
  return 2 * below + (below + 1 < x.count && x.splitters[below] == key ? 1u : 0u);
}

// ---- the block sort: LSD radix sort in shared memory -------------------------------------

template <class T>
struct SortShared {
  uint32_t keys[2][T::sort_capacity];
  unsigned counters[T::counter_words];  // per (digit, warp), digit-major
  unsigned digit_base[radix_digits];    // the global-memory fallback's running digit offsets
  unsigned warp_sums[T::warps];
  uint32_t extremes[2][T::warps];
  int launched;
};

__device__ __forceinline__ int bits_of(uint32_t span) { return span == 0 ? 0 : 32 - __clz(span); }

// One stable counting pass: in[0, m) to out[0, m) by the digit ((key - low) >> shift) & 255.
// Warp w owns keys [w * 32 * items, (w + 1) * 32 * items) and takes them 32 at a time, so the
// order (digit, warp, round, lane) of the scan below is the keys' own order within a digit.
// Leaves each (digit, warp 0) counter holding the digit's first place in out.
template <class T>
__device__ void radix_pass(const uint32_t* in, uint32_t* out, unsigned m, uint32_t low, int shift,
                           SortShared<T>& sh) {
  const int warp = threadIdx.x / 32;
  const unsigned items = divide_up(m, T::threads);
  const unsigned first = warp * 32 * items + threadIdx.x % 32;
  for (unsigned i = threadIdx.x; i < T::counter_words; i += T::threads) sh.counters[i] = 0;
  __syncthreads();
  unsigned rank[T::sort_items];
#pragma unroll
  for (int r = 0; r < T::sort_items; ++r) {
    if (unsigned(r) >= items) break;
    const unsigned i = first + unsigned(r) * 32;
    const unsigned active = __ballot_sync(full_mask, i < m);
    if (i < m) {
      const unsigned digit = ((in[i] - low) >> shift) & (radix_digits - 1);
      unsigned* counter = &sh.counters[digit * T::counter_stride + warp];
      const unsigned peers = lanes_with_digit(digit, active);
      const unsigned before = *counter;
      __syncwarp(active);  // every peer has read the counter before the lowest one moves it
      if ((peers & lanes_below()) == 0) *counter = before + __popc(peers);
      __syncwarp(active);
      rank[r] = before + __popc(peers & lanes_below());
    }
  }
  __syncthreads();
  block_scan_array<T>(sh.counters, T::counter_words, sh.warp_sums);
#pragma unroll
  for (int r = 0; r < T::sort_items; ++r) {
    if (unsigned(r) >= items) break;
    const unsigned i = first + unsigned(r) * 32;
    if (i < m) {
      const uint32_t key = in[i];
      const unsigned digit = ((key - low) >> shift) & (radix_digits - 1);
      out[sh.counters[digit * T::counter_stride + warp] + rank[r]] = key;
    }
  }
  __syncthreads();
}

// Sorts sh.keys[0][0, m), keys in [low, low + 2^bits), a digit per pass; returns the buffer
// that holds the result.
template <class T>
__device__ int block_radix_sort(unsigned m, uint32_t low, int bits, SortShared<T>& sh) {
  int current = 0;
  for (int shift = 0; shift < bits; shift += radix_bits) {
    radix_pass<T>(sh.keys[current], sh.keys[current ^ 1], m, low, shift, sh);
    current ^= 1;
  }
  return current;
}

// The smallest and largest of the block's values, to every thread.
template <class T>
__device__ void block_extremes(uint32_t& low, uint32_t& high, SortShared<T>& sh) {
  for (int d = 16; d > 0; d /= 2) {
    low = min(low, __shfl_xor_sync(full_mask, low, d));
    high = max(high, __shfl_xor_sync(full_mask, high, d));
  }
  if (threadIdx.x % 32 == 0) {
    sh.extremes[0][threadIdx.x / 32] = low;
    sh.extremes[1][threadIdx.x / 32] = high;
  }
  __syncthreads();
  for (int w = 0; w < T::warps; ++w) {
    low = min(low, sh.extremes[0][w]);
    high = max(high, sh.extremes[1][w]);
  }
  __syncthreads();
}

// The counting sort's bins: as many as the radix passes' counters hold (a power of two), or
// fewer for a few keys, about one key per bin.
template <class T>
__device__ __forceinline__ int bin_bits_for(unsigned m) {
  constexpr int most = 31 - __builtin_clz(T::counter_words);
  return min(most, max(1, bits_of(m)));
}

// A bin with more keys than this (keys bunched within the block's range) makes the block sort
// by radix passes instead: sorting a bin by insertion costs the square of its keys.
constexpr unsigned insertion_limit = 32;

// Sorts the block's m keys, held as key[r] = key (r * threads + thread) for r * threads +
// thread < m, known to lie in [low, low + 2^bits); returns the shared buffer that holds them
// sorted. One counting pass by their leading bits puts them into about m bins, each lane
// taking a slot in its key's bin with a shared-memory atomic (no order kept), and each thread
// then sorts a run of consecutive bins by insertion. That is a handful of instructions per
// key, where each radix pass (ranked per warp, in order) costs more than that, and an
// ordinary bucket needs three. Keys bunched into a few bins take the radix passes.
template <class T>
__device__ const uint32_t* sort_held_keys(const uint32_t (&key)[T::sort_items], unsigned m, uint32_t low, int bits,
                                          SortShared<T>& sh) {
  const int bin_bits = bin_bits_for<T>(m);
  const unsigned bins = 1u << bin_bits;
  const int shift = max(0, bits - bin_bits);
  unsigned* start = sh.counters;  // the bins' counts, then their first places
  uint32_t* slots = sh.keys[1];   // each key's slot in its bin, at the key's own place
  uint32_t* binned = sh.keys[0];
  for (unsigned b = threadIdx.x; b < bins; b += T::threads) start[b] = 0;
  __syncthreads();
#pragma unroll
  for (int r = 0; r < T::sort_items; ++r) {
    const unsigned i = unsigned(r) * T::threads + threadIdx.x;
    const unsigned active = __ballot_sync(full_mask, i < m);
    if (i < m) slots[i] = claim_slot(start, (key[r] - low) >> shift, active);
  }
  __syncthreads();
  // Thread t sorts bins [first_bin, last_bin): all of them, when there are fewer bins than threads.
  const unsigned first_bin = unsigned(uint64_t(threadIdx.x) * bins / T::threads);
  const unsigned last_bin = unsigned(uint64_t(threadIdx.x + 1) * bins / T::threads);
  bool crowded = false;
  for (unsigned b = first_bin; b < last_bin; ++b) crowded |= start[b] > insertion_limit;
  if (__syncthreads_or(crowded)) {
#pragma unroll
    for (int r = 0; r < T::sort_items; ++r) {
      const unsigned i = unsigned(r) * T::threads + threadIdx.x;
      if (i < m) sh.keys[0][i] = key[r];
    }
    __syncthreads();
    return sh.keys[block_radix_sort<T>(m, low, bits, sh)];
  }
  block_scan_array<T>(start, bins, sh.warp_sums);
#pragma unroll
  for (int r = 0; r < T::sort_items; ++r) {
    const unsigned i = unsigned(r) * T::threads + threadIdx.x;
    if (i < m) binned[start[(key[r] - low) >> shift] + slots[i]] = key[r];
  }
  __syncthreads();
  // The thread's bins are one run of places; sorting the run sorts each bin, since no key of
  // a bin is smaller than one of the bin before.
  const unsigned run_begin = first_bin < bins ? start[first_bin] : m;
  const unsigned run_end = last_bin < bins ? start[last_bin] : m;
  for (unsigned i = run_begin + 1; i < run_end; ++i) {
    const uint32_t x = binned[i];
    unsigned j = i;
    for (; j > run_begin && binned[j - 1] > x; --j) binned[j] = binned[j - 1];
    binned[j] = x;
  }
  __syncthreads();
  return binned;
}

// Sorts src[0, m) (m <= T::sort_capacity) into dst[0, m) (which may be src), the keys known
// to lie in [low, low + 2^bits).
template <class T>
__device__ void sort_in_block(const uint32_t* src, uint32_t* dst, unsigned m, uint32_t low, int bits,
                              SortShared<T>& sh) {
  uint32_t key[T::sort_items];  // every load in flight before the first store
#pragma unroll
  for (int r = 0; r < T::sort_items; ++r) {
    const unsigned i = unsigned(r) * T::threads + threadIdx.x;
    if (i < m) key[r] = src[i];
  }
  const uint32_t* sorted = sort_held_keys<T>(key, m, low, bits, sh);
  for (unsigned i = threadIdx.x; i < m; i += T::threads) dst[i] = sorted[i];
}

// The last resort for a bucket too large for shared memory when no child sort can start (the
// depth limit, or the pool of bookkeeping is spent): its block sorts it in global memory. Each
// pass counts the digits, then runs the stable pass above on one tile at a time, whose keys go
// after those of the same digit from earlier tiles.
template <class T>
__device__ void sort_in_global_memory(const Buffers& b, const Segment& s, uint32_t low, int bits,
                                      SortShared<T>& sh) {
  uint32_t* from = keys_of(b, s);
  uint32_t* to = other_keys_of(b, s);
  for (int shift = 0; shift < bits; shift += radix_bits) {
    for (unsigned d = threadIdx.x; d < radix_digits; d += T::threads) sh.digit_base[d] = 0;
    __syncthreads();
    for (unsigned i = threadIdx.x; i < s.size; i += T::threads)
      atomicAdd(&sh.digit_base[((from[i] - low) >> shift) & (radix_digits - 1)], 1u);
    __syncthreads();
    block_scan_array<T>(sh.digit_base, radix_digits, sh.warp_sums);
    for (unsigned tile = 0; tile < s.size; tile += T::sort_capacity) {
      const unsigned m = min(T::sort_capacity, s.size - tile);
      for (unsigned i = threadIdx.x; i < m; i += T::threads) sh.keys[0][i] = from[tile + i];
      radix_pass<T>(sh.keys[0], sh.keys[1], m, low, shift, sh);  // its first barrier orders the loads
      for (unsigned j = threadIdx.x; j < m; j += T::threads) {
        const uint32_t key = sh.keys[1][j];
        const unsigned digit = ((key - low) >> shift) & (radix_digits - 1);
        to[sh.digit_base[digit] + j - sh.counters[digit * T::counter_stride]] = key;
      }
      __syncthreads();
      for (unsigned d = threadIdx.x; d < radix_digits; d += T::threads) {
        const unsigned next = d + 1 < radix_digits ? sh.counters[(d + 1) * T::counter_stride] : m;
        sh.digit_base[d] += next - sh.counters[d * T::counter_stride];
      }
      __syncthreads();
    }
    uint32_t* swap = from;
    from = to;
    to = swap;
  }
  uint32_t* dst = b.keys + s.begin;
  if (from != dst)
    for (unsigned i = threadIdx.x; i < s.size; i += T::threads) dst[i] = from[i];
}

// ---- the stages --------------------------------------------------------------------------

template <class T>
__global__ void __launch_bounds__(T::threads) sample_splitters_kernel(SegmentSort job);

// Keys of chunk g of the segment: [begin, end), relative to it.
__device__ __forceinline__ void chunk_range(const SegmentSort& job, unsigned g, unsigned& begin, unsigned& end) {
  begin = min(job.segment.size, g * job.plan.chunk_keys);
  end = min(job.segment.size, begin + job.plan.chunk_keys);
}

template <class T>
__device__ void load_splitters(const SegmentSort& job, uint32_t* splitters) {
  for (unsigned i = threadIdx.x; i < job.plan.splitters; i += T::threads) splitters[i] = job.meta.splitters[i];
}

__host__ __device__ unsigned histogram_shared_bytes(const Plan& p) {
  return (p.splitters + p.buckets + index_words) * unsigned(sizeof(unsigned));
}

// Stage 2: counts chunk blockIdx.x's keys per bucket, then claims the chunk's room in every
// bucket it has keys in (chunk_offsets), adding to the bucket's total.
template <class T>
__global__ void __launch_bounds__(T::threads) bucket_histogram_kernel(SegmentSort job) {
  const unsigned count = job.plan.splitters;
  const unsigned buckets = job.plan.buckets;
  uint32_t* splitters = shared_storage<uint32_t>();
  unsigned* counts = splitters + count;
  uint16_t* index_first = reinterpret_cast<uint16_t*>(counts + buckets);
  load_splitters<T>(job, splitters);
  for (unsigned b = threadIdx.x; b < buckets; b += T::threads) counts[b] = 0;
  __syncthreads();
  const SplitterIndex index = build_splitter_index<T>(splitters, count, index_first);
  const uint32_t* src = keys_of(job.buffers, job.segment);
  unsigned begin, end;
  chunk_range(job, blockIdx.x, begin, end);
  for (unsigned base = begin; base < end; base += T::threads * histogram_items) {
    uint32_t key[histogram_items];
#pragma unroll
    for (int r = 0; r < histogram_items; ++r) {  // every load in flight before the first search
      const unsigned i = base + unsigned(r) * T::threads + threadIdx.x;
      key[r] = i < end ? src[i] : 0u;
    }
#pragma unroll
    for (int r = 0; r < histogram_items; ++r) {
      const bool valid = base + unsigned(r) * T::threads + threadIdx.x < end;
      const unsigned active = __ballot_sync(full_mask, valid);
      if (valid) claim_slot(counts, bucket_of(index, key[r]), active);
    }
  }
  __syncthreads();
  for (unsigned b = threadIdx.x; b < buckets; b += T::threads) {
    const unsigned c = counts[b];
    if (c != 0) job.meta.chunk_offsets[blockIdx.x * buckets + b] = atomicAdd(&job.meta.totals[b], c);
  }
}

// The scatter's shared memory, as offsets in words (its size depends on the plan).
struct ScatterLayout {
  unsigned splitters, index, write_at, tile_count, tile_start, staged_keys, staged_buckets, warp_sums, words;
};

template <class T>
__host__ __device__ ScatterLayout scatter_layout(const Plan& p) {
  ScatterLayout l;
  l.splitters = 0;
  l.index = l.splitters + p.splitters;
  l.write_at = l.index + index_words;
  l.tile_count = l.write_at + p.buckets;
  l.tile_start = l.tile_count + p.buckets;
  l.staged_keys = l.tile_start + p.buckets;
  l.staged_buckets = l.staged_keys + T::tile_keys;  // 16-bit bucket numbers
  l.warp_sums = l.staged_buckets + T::tile_keys / 2;
  l.words = l.warp_sums + T::warps;
  return l;
}

// Stage 3: moves chunk blockIdx.x's keys into the other buffer, at the room stage 2 claimed.
// A tile at a time: each key takes a slot among the tile's keys of its bucket (a shared-memory
// atomic; the order within a bucket does not matter, since stage 4 sorts it), staged
// in bucket order in shared memory, and written out in that order, so that consecutive threads
// write consecutive places of a bucket.
template <class T>
__global__ void __launch_bounds__(T::threads) bucket_scatter_kernel(SegmentSort job) {
  const unsigned count = job.plan.splitters;
  const unsigned buckets = job.plan.buckets;
  const ScatterLayout l = scatter_layout<T>(job.plan);
  unsigned* shared = shared_storage<unsigned>();
  uint32_t* splitters = shared + l.splitters;
  uint16_t* index_first = reinterpret_cast<uint16_t*>(shared + l.index);
  unsigned* write_at = shared + l.write_at;  // the chunk's next place in each bucket
  unsigned* tile_count = shared + l.tile_count;
  unsigned* tile_start = shared + l.tile_start;
  uint32_t* staged_keys = shared + l.staged_keys;
  uint16_t* staged_buckets = reinterpret_cast<uint16_t*>(shared + l.staged_buckets);
  unsigned* warp_sums = shared + l.warp_sums;

  load_splitters<T>(job, splitters);
  for (unsigned b = threadIdx.x; b < buckets; b += T::threads) write_at[b] = job.meta.totals[b];
  __syncthreads();
  const SplitterIndex index = build_splitter_index<T>(splitters, count, index_first);
  block_scan_array<T>(write_at, buckets, warp_sums);  // now the buckets' starts
  if (blockIdx.x == 0) {
    for (unsigned b = threadIdx.x; b < buckets; b += T::threads) job.meta.bucket_start[b] = write_at[b];
    if (threadIdx.x == 0) job.meta.bucket_start[buckets] = job.segment.size;
  }
  __syncthreads();
  // A bucket this chunk has no keys in gets a meaningless place here, and never uses it.
  for (unsigned b = threadIdx.x; b < buckets; b += T::threads)
    write_at[b] += job.meta.chunk_offsets[blockIdx.x * buckets + b];

  const uint32_t* src = keys_of(job.buffers, job.segment);
  uint32_t* dst = other_keys_of(job.buffers, job.segment);
  unsigned begin, end;
  chunk_range(job, blockIdx.x, begin, end);
  for (unsigned base = begin; base < end; base += T::tile_keys) {
    const unsigned tile_size = min(T::tile_keys, end - base);
    for (unsigned b = threadIdx.x; b < buckets; b += T::threads) tile_count[b] = 0;
    uint32_t key[T::tile_items];
#pragma unroll
    for (int r = 0; r < T::tile_items; ++r) {
      const unsigned i = unsigned(r) * T::threads + threadIdx.x;
      key[r] = i < tile_size ? src[base + i] : 0u;
    }
    __syncthreads();
    unsigned slot[T::tile_items];  // bucket << 16 | rank among the tile's keys of that bucket
#pragma unroll
    for (int r = 0; r < T::tile_items; ++r) {
      const bool valid = unsigned(r) * T::threads + threadIdx.x < tile_size;
      const unsigned active = __ballot_sync(full_mask, valid);
      if (valid) {
        const unsigned bucket = bucket_of(index, key[r]);
        slot[r] = bucket << 16 | claim_slot(tile_count, bucket, active);
      }
    }
    __syncthreads();
    for (unsigned b = threadIdx.x; b < buckets; b += T::threads) tile_start[b] = tile_count[b];
    __syncthreads();
    block_scan_array<T>(tile_start, buckets, warp_sums);
#pragma unroll
    for (int r = 0; r < T::tile_items; ++r) {
      if (unsigned(r) * T::threads + threadIdx.x < tile_size) {
        const unsigned bucket = slot[r] >> 16;
        const unsigned j = tile_start[bucket] + (slot[r] & 0xffffu);
        staged_keys[j] = key[r];
        staged_buckets[j] = uint16_t(bucket);
      }
    }
    __syncthreads();
    for (unsigned j = threadIdx.x; j < tile_size; j += T::threads) {
      const unsigned bucket = staged_buckets[j];
      dst[write_at[bucket] + j - tile_start[bucket]] = staged_keys[j];
    }
    __syncthreads();
    for (unsigned b = threadIdx.x; b < buckets; b += T::threads) write_at[b] += tile_count[b];
    __syncthreads();
  }
}

// A bucket too large for one block becomes a sort of its own: its bookkeeping from the pool,
// and stage 1 launched on it (fire-and-forget: the launching grid is complete only once the
// child's whole tree is). Run by one thread; false when the bucket must be sorted here.
template <class T>
__device__ bool launch_child_sort(const Buffers& b, const Segment& bucket) {
  if (bucket.depth > max_depth) return false;
  const Plan plan = plan_for<T>(bucket.size, b.sms);
  const unsigned words = meta_words(plan);
  const unsigned at = atomicAdd(&b.control->pool_used, words);
  if (at > b.pool_words || words > b.pool_words - at) return false;
  const SegmentSort child{b, bucket, plan, carve_meta(b.pool + at, plan), 1};
  sample_splitters_kernel<T><<<1, T::threads, sizeof(SortShared<T>), cudaStreamFireAndForget>>>(child);
  return cudaGetLastError() == cudaSuccess;
}

// Open bucket 2i: sorted by this block into d_keys, or handed to a child sort.
template <class T>
__device__ void sort_open_bucket(const SegmentSort& job, unsigned i, SortShared<T>& sh) {
  const unsigned first = job.meta.bucket_start[2 * i];
  const unsigned size = job.meta.bucket_start[2 * i + 1] - first;
  if (size == 0) return;
  // Its keys lie strictly between splitters i - 1 and i, so only the bits by which
  // (key - low) can differ need sorting.
  const uint32_t low = i == 0 ? 0u : job.meta.splitters[i - 1] + 1u;
  const uint32_t high = i + 1 == job.plan.splitters ? UINT_MAX : job.meta.splitters[i] - 1u;
  const Segment bucket{job.segment.begin + first, size, !job.segment.in_keys, job.segment.depth + 1};
  if (size <= T::block_sort_max) {
    sort_in_block<T>(keys_of(job.buffers, bucket), job.buffers.keys + bucket.begin, size, low, bits_of(high - low),
                     sh);
    return;
  }
  if (threadIdx.x == 0) sh.launched = launch_child_sort<T>(job.buffers, bucket);
  __syncthreads();
  if (!sh.launched) sort_in_global_memory<T>(job.buffers, bucket, low, bits_of(high - low), sh);
}

// Writes every splitter over its equal bucket within keys [f * fill_keys, (f + 1) * fill_keys)
// of the segment: one run of equal keys can hold most of the segment, more than one block
// should write.
template <class T>
__device__ void fill_equal_buckets(const SegmentSort& job, unsigned f) {
  const unsigned* start = job.meta.bucket_start;
  const unsigned from = f * fill_keys;
  const unsigned to = min(job.segment.size, from + fill_keys);
  unsigned low = 0, high = job.plan.buckets;  // the last bucket starting at or before `from`
  while (high - low > 1) {
    const unsigned middle = (low + high) / 2;
    if (start[middle] <= from) low = middle; else high = middle;
  }
  uint32_t* keys = job.buffers.keys + job.segment.begin;
  for (unsigned b = low; b < job.plan.buckets && start[b] < to; ++b) {
    if (b % 2 == 0) continue;
    const uint32_t value = job.meta.splitters[b / 2];
    const unsigned run_end = min(start[b + 1], to);
    for (unsigned i = max(start[b], from) + threadIdx.x; i < run_end; i += T::threads) keys[i] = value;
  }
}

__host__ __device__ unsigned fill_blocks(unsigned size) { return divide_up(size, fill_keys); }

// Stage 4: blocks [0, S) sort the open buckets, the rest fill the equal ones.
template <class T>
__global__ void __launch_bounds__(T::threads) bucket_sort_kernel(SegmentSort job) {
  SortShared<T>& sh = *shared_storage<SortShared<T>>();
  if (blockIdx.x < job.plan.splitters)
    sort_open_bucket<T>(job, blockIdx.x, sh);
  else
    fill_equal_buckets<T>(job, blockIdx.x - job.plan.splitters);
}

// Key j of the sample: a pseudo-random place in the j-th of `sample` equal stretches, so the
// sample covers the whole segment and no stride in the input lines up with it.
__device__ __forceinline__ unsigned sample_place(const SegmentSort& job, unsigned j) {
  unsigned x = (j * 0x9e3779b9u) ^ job.segment.begin;
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  const unsigned stretch = job.segment.size / job.plan.sample;
  return unsigned(uint64_t(j) * job.segment.size / job.plan.sample) + x % stretch;
}

// The whole array's sample, into the first places of the scratch buffer (which the scatter
// fills only later). Many blocks gather it: the sampled keys lie far apart, and one SM keeps
// too few loads in flight to fetch thousands of them quickly.
constexpr unsigned gather_threads = 256;

__global__ void __launch_bounds__(gather_threads) gather_sample_kernel(SegmentSort job) {
  const unsigned j = blockIdx.x * gather_threads + threadIdx.x;
  if (j < job.plan.sample)
    other_keys_of(job.buffers, job.segment)[j] = keys_of(job.buffers, job.segment)[sample_place(job, j)];
}

// Stage 1, one block: the splitters from a sorted sample. In a child sort it then launches
// the other stages, each into the tail stream of this grid so that each starts once the one
// before it is complete.
template <class T>
__global__ void __launch_bounds__(T::threads) sample_splitters_kernel(SegmentSort job) {
  SortShared<T>& sh = *shared_storage<SortShared<T>>();
  const Plan& p = job.plan;
  for (unsigned b = threadIdx.x; b < p.buckets; b += T::threads) job.meta.totals[b] = 0;
  // A child sort gathers its own sample; the whole array's waits in the scratch buffer.
  const uint32_t* src = keys_of(job.buffers, job.segment);
  const uint32_t* gathered = other_keys_of(job.buffers, job.segment);
  uint32_t key[T::sort_items];  // every load in flight before the first store
#pragma unroll
  for (int r = 0; r < T::sort_items; ++r) {
    const unsigned j = unsigned(r) * T::threads + threadIdx.x;
    if (j < p.sample) key[r] = job.chained ? src[sample_place(job, j)] : gathered[j];
  }
  uint32_t low = UINT_MAX, high = 0;
#pragma unroll
  for (int r = 0; r < T::sort_items; ++r) {
    const unsigned j = unsigned(r) * T::threads + threadIdx.x;
    if (j < p.sample) {
      low = min(low, key[r]);
      high = max(high, key[r]);
    }
  }
  block_extremes<T>(low, high, sh);
  const uint32_t* sorted = sort_held_keys<T>(key, p.sample, low, bits_of(high - low), sh);
  for (unsigned i = threadIdx.x; i < p.splitters; i += T::threads)
    job.meta.splitters[i] = i + 1 < p.splitters ? sorted[(i + 1) * p.sample / p.splitters] : UINT_MAX;
  if (job.chained && threadIdx.x == 0) {
    bucket_histogram_kernel<T><<<p.chunks, T::threads, histogram_shared_bytes(p), cudaStreamTailLaunch>>>(job);
    bucket_scatter_kernel<T><<<p.chunks, T::threads, scatter_layout<T>(p).words * sizeof(unsigned),
                               cudaStreamTailLaunch>>>(job);
    bucket_sort_kernel<T><<<p.splitters + fill_blocks(job.segment.size), T::threads, sizeof(SortShared<T>),
                            cudaStreamTailLaunch>>>(job);
    if (cudaGetLastError() != cudaSuccess) __trap();  // a stage that never runs: fail loudly
  }
}

// n <= one block sort's capacity: the block sorts the whole array.
template <class T>
__global__ void __launch_bounds__(T::threads) block_radix_sort_kernel(uint32_t* keys, unsigned n) {
  SortShared<T>& sh = *shared_storage<SortShared<T>>();
  uint32_t low = UINT_MAX, high = 0;
  for (unsigned i = threadIdx.x; i < n; i += T::threads) {
    low = min(low, keys[i]);
    high = max(high, keys[i]);
  }
  block_extremes<T>(low, high, sh);
  sort_in_block<T>(keys, keys, n, low, bits_of(high - low), sh);
}

// ---- host side ---------------------------------------------------------------------------

size_t align_up(size_t bytes) { return (bytes + 255) / 256 * 256; }

// The child sorts' bookkeeping: at each depth the children's segments are disjoint, and a
// child's words are at most a quarter of its keys (its chunks x buckets counts) plus a few.
size_t pool_words(size_t n) {
  return size_t(max_depth) * (n / 4 + 8 * (n / CompactTuning::block_sort_max + 1) + 1024);
}

struct Layout {
  size_t scratch, control, meta, pool, total;
};

// The top segment's bookkeeping is sized for the larger plan of the two tunings.
Layout layout(size_t n) {
  const unsigned top_words = std::max(meta_words(plan_for<WideTuning>(unsigned(n), max_chunks)),
                                      meta_words(plan_for<CompactTuning>(unsigned(n), max_chunks)));
  Layout l{};
  l.scratch = 0;
  l.control = align_up(n * sizeof(uint32_t));
  l.meta = l.control + align_up(sizeof(Control));
  l.pool = l.meta + align_up(top_words * sizeof(unsigned));
  l.total = l.pool + align_up(pool_words(n) * sizeof(unsigned));
  return l;
}

// The plan with the most splitters a tuning allows: what sizes the kernels' shared memory.
template <class T>
Plan largest_plan() {
  Plan largest{};
  largest.splitters = T::max_splitters;
  largest.buckets = 2 * T::max_splitters;
  return largest;
}

// False if a setting failed.
template <class T>
bool allow_shared_memory() {
  const Plan largest = largest_plan<T>();
  const int sort_bytes = int(sizeof(SortShared<T>));
  const auto allow = [](auto kernel, int bytes) {
    return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes) == cudaSuccess;
  };
  bool ok = allow(sample_splitters_kernel<T>, sort_bytes);
  ok &= allow(bucket_sort_kernel<T>, sort_bytes);
  ok &= allow(block_radix_sort_kernel<T>, sort_bytes);
  ok &= allow(bucket_histogram_kernel<T>, int(histogram_shared_bytes(largest)));
  ok &= allow(bucket_scatter_kernel<T>, int(scatter_layout<T>(largest).words * sizeof(unsigned)));
  return ok;
}

template <class T>
size_t largest_shared_bytes() {
  const Plan largest = largest_plan<T>();
  return std::max(sizeof(SortShared<T>), size_t(scatter_layout<T>(largest).words) * sizeof(unsigned));
}

struct Device {
  bool wide;     // the GPU gives a block enough shared memory for WideTuning
  unsigned sms;  // sizes the histogram's and the scatter's grids
};

// Once per process: the tuning the GPU's shared memory allows, opted in past 48 KB (launches
// from the device use the same attributes). A call here that fails leaves its error behind for
// the caller's next check, so it is cleared: the sort still runs, short of that setting.
Device prepare_device() {
  static const Device device = [] {
    int id = 0, sms = 0, optin = 0;
    cudaGetDevice(&id);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, id);
    cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, id);
    const bool wide = size_t(optin) >= largest_shared_bytes<WideTuning>();
    bool ok = allow_shared_memory<CompactTuning>();
    if (wide) ok &= allow_shared_memory<WideTuning>();
    if (!ok) cudaGetLastError();
    return Device{wide, unsigned(std::max(1, sms))};
  }();
  return device;
}

// Room for the device runtime's pending launches (a child sort holds four until they run),
// once a sort is large enough to have thousands of child sorts: buckets over the block sort's
// capacity are common only past max_splitters x target_bucket keys. Not before: the pool costs
// device memory, and a larger one may slow every launch from the device
// (docs/design/10-quicksort.md).
template <class T>
void allow_child_sorts(size_t n) {
  static bool raised = false;
  const bool test_build = T::block_sort_max < T::sort_capacity;  // child sorts on every input
  if (raised || (n <= size_t(T::max_splitters) * T::target_bucket && !test_build)) return;
  raised = true;
  constexpr size_t wanted = size_t(1) << 14;
  size_t pending = 0;
  if (cudaDeviceGetLimit(&pending, cudaLimitDevRuntimePendingLaunchCount) == cudaSuccess && pending >= wanted) return;
  if (cudaDeviceSetLimit(cudaLimitDevRuntimePendingLaunchCount, wanted) != cudaSuccess) cudaGetLastError();
}

template <class T>
void sort_keys(uint32_t* d_keys, unsigned n, char* temp, unsigned sms, cudaStream_t stream) {
  if (n <= T::block_sort_max) {
    block_radix_sort_kernel<T><<<1, T::threads, sizeof(SortShared<T>), stream>>>(d_keys, n);
    return;
  }
  const Layout l = layout(n);
  const Buffers buffers{d_keys,
                        reinterpret_cast<uint32_t*>(temp + l.scratch),
                        reinterpret_cast<Control*>(temp + l.control),
                        reinterpret_cast<unsigned*>(temp + l.pool),
                        unsigned(pool_words(n)),
                        sms};
  cudaMemsetAsync(buffers.control, 0, sizeof(Control), stream);
  const Plan p = plan_for<T>(n, sms);
  const SegmentSort job{buffers, Segment{0, n, 1, 0}, p, carve_meta(reinterpret_cast<unsigned*>(temp + l.meta), p), 0};
  gather_sample_kernel<<<divide_up(p.sample, gather_threads), gather_threads, 0, stream>>>(job);
  sample_splitters_kernel<T><<<1, T::threads, sizeof(SortShared<T>), stream>>>(job);
  bucket_histogram_kernel<T><<<p.chunks, T::threads, histogram_shared_bytes(p), stream>>>(job);
  bucket_scatter_kernel<T><<<p.chunks, T::threads, scatter_layout<T>(p).words * sizeof(unsigned), stream>>>(job);
  bucket_sort_kernel<T><<<p.splitters + fill_blocks(n), T::threads, sizeof(SortShared<T>), stream>>>(job);
}

}  // namespace

extern "C" size_t quicksort_temp_bytes(size_t n) { return layout(n).total; }

extern "C" void quicksort(uint32_t* d_keys, size_t n, void* d_temp, size_t temp_bytes, cudaStream_t stream) {
  (void)temp_bytes;
  if (n <= 1) return;
  const Device device = prepare_device();
#ifdef QUICKSORT_FORCE_COMPACT  // a test build: the compact shape on any GPU
  const bool wide = false;
#else
  const bool wide = device.wide;
#endif
  if (wide) {
    allow_child_sorts<WideTuning>(n);
    sort_keys<WideTuning>(d_keys, unsigned(n), static_cast<char*>(d_temp), device.sms, stream);
  } else {
    allow_child_sorts<CompactTuning>(n);
    sort_keys<CompactTuning>(d_keys, unsigned(n), static_cast<char*>(d_temp), device.sms, stream);
  }
}
