// Lab 03 design record: how close a lean one-launch top-k comes to the read-only kernel at
// n = 10^7, given its bound or finding it from a sample. The read-only kernel's loop (one block of
// 1024 threads an SM, 16-byte streaming loads, 8 in flight) keeps every value at or above the
// bound in a global list (an atomic a value, or one a warp); each block then counts itself in,
// and the last one ranks the survivors in shared memory by fine bins and writes the top k. The
// bound is given (the input's m-th largest, m values passing), or every block finds the same
// one from the same strided sample of 16,384 values (its r-th largest, to 10 bits short of the
// key), loaded directly or first copied into shared memory by cp.async, or drawn from the
// blocks' pooled samples at a quorum (topk_pooled, below). Three more hold the whole input on
// chip, as 10^7 values fit in 132 SMs' shared memory and registers: topk_onchip and
// topk_onchip_pooled agree on the bound after the read, topk_held_pooled while it is under way.
// Timed by 03-top-k-call-timing.cuh beside the read-only kernel, an empty kernel of the
// reference's launch shape and the reference; every call's top k is checked. On a GPU machine,
// from the repository root:
//   nvcc -O3 -std=c++17 -arch=sm_90 -Ilabs/03-top-k -Iharness/include -Idocs/design \
//        -o /tmp/lean docs/design/03-top-k-lean.cu
//   /tmp/lean [onchip | held | probe | reference | shapes]   (main says what each runs)
#include <cuda_pipeline.h>

#include <cstdio>
#include <labkit/read_only.cuh>
#include <string>
#include <vector>

#include "../../solutions/03-top-k/topk.cu"
#include "03-top-k-call-timing.cuh"

namespace lean {
constexpr int threads = 1024, unroll = 8, bins = 2048, capacity = 12288;

__host__ __device__ __forceinline__ uint32_t key_of(int32_t v) { return uint32_t(v) ^ 0x80000000u; }

// The shift that spreads [0, span] over the `bins` bins: (span >> shift) < bins.
__device__ __forceinline__ uint32_t shift_to_bins(uint32_t span) { return span < bins ? 0 : 32 - __clz(span >> 11); }

// The pooled kernel's stamps: thread 0 of each block writes the globaltimer into stamps[at],
// its block's row being stamps_per_block long (main prints them for one call); nothing when
// there are no stamps.
constexpr int stamps_per_block = 11;
__device__ __forceinline__ void stamp_at(unsigned long long* stamps, uint32_t at) {
  if (stamps == nullptr || threadIdx.x != 0) return;
  unsigned long long now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  stamps[at] = now;
}

struct State {
  uint32_t survivors, arrivals, last_survivors;
  uint32_t sample_arrivals;
  unsigned long long sample_tally;  // relaxed arrivals (send_sample): blocks << 32 | keys sent
  unsigned long long published;     // the pooled bound (topk_pooled): the call's tag, then the bound
};
constexpr int max_blocks = 256, slots = 32;  // a block sends at most `slots` sampled keys

__device__ __forceinline__ void keep(uint32_t key, uint32_t bound, uint32_t* kept, State* state) {
  if (key < bound) return;
  const uint32_t at = atomicAdd(&state->survivors, 1u);
  if (at < capacity) kept[at] = key;  // past it the answer is wrong, and the tool says so
}
__device__ __forceinline__ void keep4(uint4 v, uint32_t bound, uint32_t* kept, State* state) {
  keep(key_of(int32_t(v.x)), bound, kept, state);
  keep(key_of(int32_t(v.y)), bound, kept, state);
  keep(key_of(int32_t(v.z)), bound, kept, state);
  keep(key_of(int32_t(v.w)), bound, kept, state);
}

// higher[b] = the counts in bins above b, two bins a thread scanned from the top; ends synced.
__device__ void suffix_scan(const uint32_t* counts, uint32_t* higher) {
  __shared__ uint32_t warp_total[threads / 32];
  const int t = threadIdx.x;
  const int b0 = bins - 1 - 2 * t;
  const uint32_t mine = counts[b0] + counts[b0 - 1];
  uint32_t incl = mine;
  for (int d = 1; d < 32; d *= 2) {
    const uint32_t o = __shfl_up_sync(~0u, incl, d);
    if ((t & 31) >= d) incl += o;
  }
  if ((t & 31) == 31) warp_total[t / 32] = incl;
  __syncthreads();
  if (t < 32) {  // the warps' totals scanned by one warp, exclusive
    const uint32_t total = warp_total[t];
    uint32_t running = total;
    for (int d = 1; d < 32; d *= 2) {
      const uint32_t o = __shfl_up_sync(~0u, running, d);
      if (t >= d) running += o;
    }
    warp_total[t] = running - total;
  }
  __syncthreads();
  const uint32_t before = warp_total[t / 32];
  higher[b0] = before + incl - mine;
  higher[b0 - 1] = before + incl - mine + counts[b0];
  __syncthreads();
}

// The bin of `counts` that holds the r-th largest (1-based), and how many lie above it.
__device__ void find_from_top(const uint32_t* counts, uint32_t* higher, uint32_t r, uint32_t& bin, uint32_t& above) {
  __shared__ uint32_t found_bin, found_above;
  if (threadIdx.x == 0) found_bin = 0, found_above = 0;  // fewer than r counted: every key passes
  suffix_scan(counts, higher);
  for (int b = threadIdx.x; b < bins; b += threads)
    if (higher[b] < r && higher[b] + counts[b] >= r) found_bin = b, found_above = higher[b];
  __syncthreads();
  bin = found_bin;
  above = found_above;
}

// A lower bound on the k-th largest that every block finds alike: the r-th largest of the same
// strided sample of 16 values a thread (each block reads it; after the first, from L2), to 10
// bits short of the key.
__device__ uint32_t sample_bound(const uint4* in, size_t count, uint32_t r, uint32_t* level1, uint32_t* higher,
                                 uint32_t* level2, const uint32_t* staged) {
  const int t = threadIdx.x;
  uint32_t key[16];
  if (staged != nullptr) {
#pragma unroll
    for (int j = 0; j < 16; ++j) key[j] = key_of(int32_t(staged[j * threads + t]));
  } else {
    const size_t step = count / (threads * 4);
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const uint4 v = __ldg(in + (size_t(q) * threads + t) * step);
      key[4 * q] = key_of(v.x), key[4 * q + 1] = key_of(v.y), key[4 * q + 2] = key_of(v.z),
              key[4 * q + 3] = key_of(v.w);
    }
  }
  for (int b = t; b < bins; b += threads) level1[b] = level2[b] = 0;
  __syncthreads();
#pragma unroll
  for (int j = 0; j < 16; ++j) atomicAdd(&level1[key[j] >> 21], 1u);
  __syncthreads();
  uint32_t top_bin, above;
  find_from_top(level1, higher, r, top_bin, above);
#pragma unroll
  for (int j = 0; j < 16; ++j)
    if (key[j] >> 21 == top_bin) atomicAdd(&level2[(key[j] >> 10) & (bins - 1)], 1u);
  __syncthreads();
  uint32_t fine_bin, fine_above;
  find_from_top(level2, higher, r - above, fine_bin, fine_above);
  return (top_bin << 21) | (fine_bin << 10);
}

// The last block: the survivors ranked in shared memory by the reference's held kernel's finish
// (fine bins over their range, grouped by bin from the top, each ranked within its bin).
constexpr size_t finish_shared_bytes = (2 * capacity + 3 * bins) * sizeof(uint32_t);
static_assert(finish_shared_bytes == held::finish_shared_bytes, "the same layout");

__device__ void finish(const uint32_t* kept, uint32_t count, uint32_t k, uint32_t bound, int32_t* out) {
  extern __shared__ uint32_t shared[];
  held::rank_list(kept, count, k, bound, shared, out);
}

// One batch of `batch` vectors a thread: each value at or above the bound kept, by an atomic
// a value or (aggregated) one a warp, none when the warp has no survivor. The whole warp calls
// it aggregated.
template <bool aggregated, int batch = unroll>
__device__ __forceinline__ void keep_batch(const uint4 (&v)[batch], uint32_t bound, uint32_t* kept, State* state) {
  if (!aggregated) {
#pragma unroll
    for (int u = 0; u < batch; ++u) keep4(v[u], bound, kept, state);
    return;
  }
  uint32_t mine = 0;
#pragma unroll
  for (int u = 0; u < batch; ++u)
    mine +=
        (key_of(v[u].x) >= bound) + (key_of(v[u].y) >= bound) + (key_of(v[u].z) >= bound) + (key_of(v[u].w) >= bound);
  const uint32_t warp_count = __reduce_add_sync(~0u, mine);
  if (warp_count == 0) return;
  const unsigned lane = threadIdx.x & 31;
  uint32_t before = mine;
  for (int d = 1; d < 32; d *= 2) {
    const uint32_t o = __shfl_up_sync(~0u, before, d);
    if (lane >= d) before += o;
  }
  before -= mine;
  uint32_t base = 0;
  if (lane == 0) base = atomicAdd(&state->survivors, warp_count);
  uint32_t at = __shfl_sync(~0u, base, 0) + before;
#pragma unroll
  for (int u = 0; u < batch; ++u)
    for (uint32_t x : {v[u].x, v[u].y, v[u].z, v[u].w})
      if (key_of(int32_t(x)) >= bound && at < capacity) kept[at++] = key_of(int32_t(x));
}

// The block counts itself in, and the last one ranks the survivors and leaves the state zeroed
// for the next call; returns whether this block was the last.
template <class Stamp>
__device__ bool finish_if_last(uint32_t k, uint32_t bound, uint32_t* kept, State* state, int32_t* out, Stamp stamp) {
  __shared__ bool last;
  __syncthreads();
  stamp(4);
  if (threadIdx.x == 0) {
    cuda::atomic_ref<uint32_t, cuda::thread_scope_device> arrivals(state->arrivals);
    last = arrivals.fetch_add(1, cuda::memory_order_acq_rel) == gridDim.x - 1;
  }
  __syncthreads();
  if (!last) return false;
  stamp(5);
  const uint32_t survivors =
      cuda::atomic_ref<uint32_t, cuda::thread_scope_device>(state->survivors).load(cuda::memory_order_acquire);
  finish(kept, min(survivors, uint32_t(capacity)), k, bound, out);
  stamp(6);
  if (threadIdx.x == 0) {
    state->survivors = state->arrivals = state->sample_arrivals = 0;
    state->sample_tally = 0;
    state->last_survivors = survivors;
  }
  return true;
}

// The read from vector i on, each value at or above the bound kept; then the finish.
template <bool aggregated, class Stamp>
__device__ void read_rest_and_finish(const uint4* in, size_t i, size_t count, uint32_t k, uint32_t bound,
                                     uint32_t* kept, State* state, int32_t* out, Stamp stamp) {
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  for (; i + (unroll - 1) * stride < count; i += unroll * stride) {
    uint4 v[unroll];
#pragma unroll
    for (int u = 0; u < unroll; ++u) v[u] = __ldcs(in + i + u * stride);
    keep_batch<aggregated>(v, bound, kept, state);
  }
  for (; i < count; i += stride) keep4(__ldcs(in + i), bound, kept, state);
  finish_if_last(k, bound, kept, state, out, stamp);
}

// sampled: bound_or_r is r, and each block finds the bound from the shared sample while its
// first batch loads; else bound_or_r is the bound.
template <bool aggregated, bool sampled, bool early = false>
__global__ void __launch_bounds__(threads) topk_lean(const uint4* in, size_t count, uint32_t k, uint32_t bound_or_r,
                                                     uint32_t* kept, State* state, int32_t* out) {
  extern __shared__ uint32_t shared[];
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  uint32_t bound = bound_or_r;
  if (sampled) {
    // early: the sample copied into shared memory ahead of the block's first loads
    if (early) {
      const size_t step = count / (threads * 4);
#pragma unroll
      for (int q = 0; q < 4; ++q)
        __pipeline_memcpy_async(shared + 4 * (q * threads + threadIdx.x),
                                in + (size_t(q) * threads + threadIdx.x) * step, 16);
      __pipeline_commit();
    }
    uint4 v[unroll];
    const bool whole = i + (unroll - 1) * stride < count;
    if (whole)
#pragma unroll
      for (int u = 0; u < unroll; ++u) v[u] = __ldcs(in + i + u * stride);
    if (early) {
      __pipeline_wait_prior(0);
      __syncthreads();
    }
    bound = sample_bound(in, count, bound_or_r, shared + 2 * capacity, shared + 2 * capacity + bins,
                         shared + 2 * capacity + 2 * bins, early ? shared : nullptr);
    if (whole) {
      keep_batch<aggregated>(v, bound, kept, state);
      i += unroll * stride;
    }
  }
  read_rest_and_finish<aggregated>(in, i, count, k, bound, kept, state, out, [](int) {});
}

// ---- the lean read with its bound drawn from the blocks' pooled samples ----------------------
// Each block loads its first batch into registers; once the sampled part of it (its first
// `sample_vectors` vectors a thread) has come in, the block sends its keys there at or above the
// r-th largest of its threads' maxima (at most `slots`: any subset of the input gives a lower
// bound on the k-th largest), tagged with the call, and counts itself in. The block that
// completes the quorum draws the bound, the k-th largest of what has been sent, and publishes
// it; every block then filters what it holds and reads on. Optionally a second batch is loaded
// into shared memory by cp.async meanwhile, or the first batch's unsampled vectors are loaded
// only after the sample. With `stamps`, thread 0 of each block writes the globaltimer at each
// step (main prints them for one call).
constexpr size_t staged_bytes = size_t(unroll) * threads * sizeof(uint4);
constexpr size_t pooled_shared_bytes = std::max(finish_shared_bytes, staged_bytes + 3 * bins * sizeof(uint32_t));

// Sends the sample and counts the block in; returns whether its arrival completed the quorum.
// Each sent key carries the call's tag in the same 64-bit word, so a reader needs no count.
// The largest key of the thread's first `sample_vectors` vectors; vector(u) gives the u-th.
template <int sample_vectors, class Vector>
__device__ __forceinline__ uint32_t largest_key(Vector vector) {
  uint32_t most = 0;
#pragma unroll
  for (int u = 0; u < sample_vectors; ++u) {
    const uint4 v = vector(u);
    most = max(most,
               max(max(key_of(int32_t(v.x)), key_of(int32_t(v.y))), max(key_of(int32_t(v.z)), key_of(int32_t(v.w)))));
  }
  return most;
}

// What a block's arrival tells it: whether it draws, and (relaxed) how many keys the quorum sent.
struct Arrival {
  bool draws;
  uint32_t keys_sent;
};

// Sends the largest `slots` of keys[0, m) (m <= threads) into the block's row, each tagged with
// the call: each key's place is the number of keys that come before it, ties by index.
__device__ __forceinline__ void send_largest(const uint32_t* keys, uint32_t m, uint32_t tag, unsigned long long* row) {
  const uint32_t t = threadIdx.x;
  if (t >= m) return;
  const uint32_t key = keys[t];
  uint32_t rank = 0;
  for (uint32_t j = 0; j < m; ++j) rank += keys[j] > key || (keys[j] == key && j < t);
  if (rank < slots) row[rank] = (static_cast<unsigned long long>(tag) << 32) | key;
}

// most: the thread's largest sampled key. two_level: the threshold to 10 bits short of the key;
// else to 21 bits short (one histogram; more keys may pass it, and only `slots` are sent).
// relaxed: the arrival carries no fence, which would wait for every load the block has in flight;
// it adds the block's count of keys instead, and the drawer waits until that many have landed.
// candidates (most_candidates keys of shared memory): the keys at or above the threshold are
// gathered there and the largest `slots` sent; else the first `slots` to claim a slot.
constexpr int most_candidates = 256;
template <int sample_vectors, bool two_level = true, bool relaxed = false, class Vector>
__device__ Arrival send_sample(uint32_t most, Vector vector, uint32_t r, uint32_t* level1, uint32_t* higher,
                               unsigned long long* sent, uint32_t tag, uint32_t quorum, State* state,
                               uint32_t* candidates = nullptr) {
  // The threshold: the r-th largest of the threads' own maxima (a subset, so at most the
  // block's r-th largest): one histogram entry a thread, not 32.
  __shared__ uint32_t claimed;
  uint32_t* level2 = higher + bins;  // two_level only
  const int t = threadIdx.x;
  for (int b = t; b < bins; b += threads) {
    level1[b] = 0;
    if (two_level) level2[b] = 0;
  }
  if (t == 0) claimed = 0;
  __syncthreads();
  atomicAdd(&level1[most >> 21], 1u);
  __syncthreads();
  uint32_t bin, above;
  find_from_top(level1, higher, r, bin, above);
  uint32_t threshold = bin << 21;
  if (two_level) {
    if (most >> 21 == bin) atomicAdd(&level2[(most >> 10) & (bins - 1)], 1u);
    __syncthreads();
    uint32_t fine, fine_above;
    find_from_top(level2, higher, r - above, fine, fine_above);
    threshold |= fine << 10;
  }
  unsigned long long* mine = sent + blockIdx.x * slots;
  auto tagged = [&](uint32_t key) { return (static_cast<unsigned long long>(tag) << 32) | key; };
  if (most >= threshold) {
#pragma unroll
    for (int u = 0; u < sample_vectors; ++u) {
      const uint4 v = vector(u);
      for (uint32_t x : {v.x, v.y, v.z, v.w})
        if (key_of(int32_t(x)) >= threshold) {
          const uint32_t slot = atomicAdd(&claimed, 1u);
          if (candidates == nullptr && slot < slots) mine[slot] = tagged(key_of(int32_t(x)));
          if (candidates != nullptr && slot < most_candidates) candidates[slot] = key_of(int32_t(x));
        }
    }
  }
  if (candidates != nullptr) {  // the largest `slots` of the (first most_candidates) keys sent
    __syncthreads();
    send_largest(candidates, min(claimed, uint32_t(most_candidates)), tag, mine);
  }
  // Fenced, the arrival releases the block's sent keys (the barrier puts them before it); thread
  // 0's warp has no loads in flight yet for its fence to wait for.
  __shared__ Arrival arrival;
  __syncthreads();
  if (t == 0 && relaxed) {
    const uint32_t mine = min(claimed, uint32_t(slots));
    cuda::atomic_ref<unsigned long long, cuda::thread_scope_device> tally(state->sample_tally);
    const unsigned long long before = tally.fetch_add((1ull << 32) | mine, cuda::memory_order_relaxed);
    arrival = {before >> 32 == quorum - 1, uint32_t(before) + mine};
  } else if (t == 0) {
    cuda::atomic_ref<uint32_t, cuda::thread_scope_device> arrivals(state->sample_arrivals);
    arrival = {arrivals.fetch_add(1, cuda::memory_order_acq_rel) == quorum - 1, 0};
  }
  __syncthreads();
  return arrival;
}

// The quorum's last block: the k-th largest of every sample sent so far, to the width of one of
// 2048 bins over the sent keys' range. keys_sent: after relaxed arrivals, how many keys to wait for
// (read from L2 until that many carry the call's tag); 0 after fenced ones.
__device__ uint32_t draw_bound(const unsigned long long* sent, uint32_t k, uint32_t tag, uint32_t keys_sent,
                               uint32_t* counts, uint32_t* higher, unsigned long long* stamps) {
  auto stamp = [&](int at) { stamp_at(stamps, at); };
  // One round trip: every slot at once (8 a thread), kept where it carries this call's tag. The
  // arrivals before this block's are ordered before it, so their keys are all seen.
  static_assert(max_blocks * slots == unroll * threads, "one load a slot");
  __shared__ uint32_t gathered;
  const int t = threadIdx.x;
  for (int b = t; b < bins; b += threads) counts[b] = 0;
  if (t == 0) gathered = 0;
  uint32_t key[unroll];
  bool real[unroll];
  __shared__ uint32_t landed;
  do {
    if (t == 0) landed = 0;
    uint32_t mine = 0;
#pragma unroll
    for (int u = 0; u < unroll; ++u) {
      const uint32_t slot = u * threads + t;
      const unsigned long long word = slot >= gridDim.x * slots ? 0 : keys_sent ? __ldcg(sent + slot) : sent[slot];
      real[u] = word >> 32 == tag;
      key[u] = uint32_t(word);
      mine += real[u];
    }
    if (keys_sent == 0) break;
    __syncthreads();
    if (mine != 0) atomicAdd(&landed, mine);
    __syncthreads();
  } while (landed < keys_sent);
  // One histogram over the sent keys' own range, not two levels over the key space.
  __shared__ uint32_t lowest, highest;
  if (t == 0) lowest = ~0u, highest = 0;
  uint32_t low = ~0u, high = 0;
#pragma unroll
  for (int u = 0; u < unroll; ++u)
    if (real[u]) low = min(low, key[u]), high = max(high, key[u]);
  low = __reduce_min_sync(~0u, low);
  high = __reduce_max_sync(~0u, high);
  __syncthreads();
  if (t % 32 == 0) atomicMin(&lowest, low), atomicMax(&highest, high);
  __syncthreads();
  stamp(2);
  const uint32_t span = highest - lowest;
  const uint32_t shift = shift_to_bins(span);
#pragma unroll
  for (int u = 0; u < unroll; ++u)
    if (real[u]) {
      atomicAdd(&gathered, 1u);
      atomicAdd(&counts[(key[u] - lowest) >> shift], 1u);
    }
  __syncthreads();
  stamp(0);
  if (gathered < k) return 0;  // fewer than k sent: no k-th largest, every key passes
  uint32_t bin, above;
  find_from_top(counts, higher, k, bin, above);
  stamp(1);
  return lowest + (bin << shift);
}

// The drawer draws and publishes the bound; every other block waits until it is published. The
// bound and the call's tag share one 64-bit word, so neither side needs a fence.
__device__ uint32_t agree_on_bound(Arrival arrival, uint32_t k, uint32_t tag, const unsigned long long* sent,
                                   State* state, uint32_t* level1, unsigned long long* drawer_stamps) {
  __shared__ uint32_t bound;
  const int t = threadIdx.x;
  cuda::atomic_ref<unsigned long long, cuda::thread_scope_device> published(state->published);
  if (arrival.draws) {
    const uint32_t drawn = draw_bound(sent, k, tag, arrival.keys_sent, level1, level1 + bins, drawer_stamps);
    if (t == 0) published.store((static_cast<unsigned long long>(tag) << 32) | drawn, cuda::memory_order_relaxed);
    return drawn;
  }
  if (t == 0) {
    unsigned long long word;
    while ((word = published.load(cuda::memory_order_relaxed)) >> 32 != tag) {
    }
    bound = uint32_t(word);
  }
  __syncthreads();
  return bound;
}

// sample_vectors: how many of the first batch's vectors a thread samples (the first ones in,
// as the memory serves about in the order asked); second_batch: whether a second batch is
// loaded into shared memory while the bound is drawn.
template <int sample_vectors = unroll, bool second_batch = true, bool rest_after_sample = false>
__global__ void __launch_bounds__(threads)
    topk_pooled(const uint4* in, size_t count, uint32_t k, uint32_t r, uint32_t quorum, uint32_t tag, uint32_t given,
                unsigned long long* sent, uint32_t* kept, State* state, int32_t* out,
                unsigned long long* stamps = nullptr) {
  auto stamp = [&](int at) { stamp_at(stamps, blockIdx.x * stamps_per_block + at); };
  stamp(0);
  extern __shared__ uint32_t shared[];
  uint4* staged = reinterpret_cast<uint4*>(shared);
  uint32_t* level1 = shared + staged_bytes / sizeof(uint32_t);
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  const int t = threadIdx.x;
  size_t i = blockIdx.x * size_t(blockDim.x) + t;
  // This sketch assumes both batches are whole for every thread (n = 10^7 on 132 SMs).
  uint4 v[unroll];
  // rest_after_sample: the first batch's vectors past the sample are loaded only once it has
  // been sent, so that the memory serves the sample first.
  const bool rest_later = rest_after_sample && given == 0;
#pragma unroll
  for (int u = 0; u < unroll; ++u)
    if (u < sample_vectors || !rest_later) v[u] = __ldcs(in + i + u * stride);
  // The second batch goes out once the first (the sample) has come in: issued with it, it would
  // share the memory's bandwidth with it and hold the sample back.
  auto load_second_batch = [&] {
    if constexpr (second_batch) {
#pragma unroll
      for (int u = 0; u < unroll; ++u)
        __pipeline_memcpy_async(staged + u * threads + t, in + i + (unroll + u) * stride, 16);
      __pipeline_commit();
    }
  };
  uint32_t b = given;
  if (given != 0) {  // the same read with the bound given: what the sample and its wait cost
    load_second_batch();
  } else {
    const Arrival arrival = send_sample<sample_vectors>(
        largest_key<sample_vectors>([&](int u) { return v[u]; }), [&](int u) { return v[u]; }, r, level1, level1 + bins,
        sent, tag, quorum, state);
    stamp(1);
    // The drawer draws before it loads more; the others load while they wait.
    auto load_more = [&] {
      if (rest_later)
#pragma unroll
        for (int u = sample_vectors; u < unroll; ++u) v[u] = __ldcs(in + i + u * stride);
      load_second_batch();
    };
    if (!arrival.draws) load_more();
    stamp(2);
    b = agree_on_bound(arrival, k, tag, sent, state, level1,
                       stamps ? stamps + blockIdx.x * stamps_per_block + 8 : nullptr);
    if (arrival.draws) {
      stamp(7);
      load_more();
    }
  }
  stamp(3);
  keep_batch<true>(v, b, kept, state);
  if (second_batch) {
    __pipeline_wait_prior(0);
#pragma unroll
    for (int u = 0; u < unroll; ++u) v[u] = staged[u * threads + t];
    keep_batch<true>(v, b, kept, state);
  }
  read_rest_and_finish<true>(in, i + (second_batch ? 2 : 1) * unroll * stride, count, k, b, kept, state, out, stamp);
}

// ---- the whole input held on chip, the bound agreed once after the read -------------------
// At 10^7 the input (40 MB) fits in the SMs: 132 blocks of 1024 threads hold 19 vectors a thread,
// `held_in_shared` in shared memory and the rest in registers. Each block counts its values in
// 2048 bins of the key's top 11 bits as they come in; after the read it adds to a global
// histogram the bins from its top down to the one where its own count reaches k (the k-th
// largest's bin is at or above that bin in every block, so the global counts there are whole),
// and waits for every block. Then each block finds the bin that holds the k-th largest, keeps
// the values it holds in that bin and above, and the last block ranks them.
constexpr int held_in_shared = 13, held_in_registers = 6;
constexpr size_t onchip_shared_bytes =
    std::max(finish_shared_bytes, sizeof(uint4) * held_in_shared * threads + 2 * bins * sizeof(uint32_t));

struct OnchipState {
  uint32_t bins_above_cuts[bins];  // the blocks' counts, each bin at or above the block's cut
  uint32_t read_arrivals;
};

// The first `batch` vectors from vector `first` a thread: loaded, counted into `counts`, and
// left in v; the vectors past the input are INT_MIN and not counted.
template <int batch>
__device__ __forceinline__ void load_and_count(const uint4* in, size_t i, size_t count, int first, uint4 (&v)[batch],
                                               uint32_t* counts) {
  const size_t stride = size_t(gridDim.x) * blockDim.x;
#pragma unroll
  for (int u = 0; u < batch; ++u) {
    const size_t at = i + (first + u) * stride;
    v[u] = at < count ? __ldcs(in + at) : make_uint4(0x80000000u, 0x80000000u, 0x80000000u, 0x80000000u);
  }
#pragma unroll
  for (int u = 0; u < batch; ++u)
    if (i + (first + u) * stride < count)
      for (uint32_t x : {v[u].x, v[u].y, v[u].z, v[u].w}) atomicAdd(&counts[key_of(int32_t(x)) >> 21], 1u);
}

// The thread's whole share of the input, held: `first_batch` vectors and then the rest of
// `held_in_shared` into shared memory, and `held_in_registers` into r, every value counted into
// `counts` on the way in.
template <int first_batch>
__device__ __forceinline__ void hold_and_count(const uint4* in, size_t i, size_t count, uint4* held, uint32_t* counts,
                                               uint4 (&r)[held_in_registers]) {
  const int t = threadIdx.x;
  constexpr int second_batch = held_in_shared - first_batch;
  {
    uint4 v[first_batch];
    load_and_count(in, i, count, 0, v, counts);
#pragma unroll
    for (int u = 0; u < first_batch; ++u) held[u * threads + t] = v[u];
  }
  {
    uint4 v[second_batch];
    load_and_count(in, i, count, first_batch, v, counts);
#pragma unroll
    for (int u = 0; u < second_batch; ++u) held[(first_batch + u) * threads + t] = v[u];
  }
  load_and_count(in, i, count, held_in_shared, r, counts);
}

template <int first_batch = 7>
__global__ void __launch_bounds__(threads, 1)
    topk_onchip(const uint4* in, size_t count, uint32_t k, OnchipState* onchip, uint32_t* kept, State* state,
                int32_t* out, unsigned long long* stamps = nullptr) {
  static_assert(size_t(held_in_shared + held_in_registers) * threads * 132 * 16 >= 40000000, "10^7 held");
  auto stamp = [&](int at) { stamp_at(stamps, blockIdx.x * stamps_per_block + at); };
  stamp(0);
  extern __shared__ uint32_t shared[];
  uint4* held = reinterpret_cast<uint4*>(shared);
  uint32_t* counts = shared + held_in_shared * threads * 4;
  uint32_t* higher = counts + bins;
  const int t = threadIdx.x;
  const size_t i = blockIdx.x * size_t(blockDim.x) + t;
  for (int b = t; b < bins; b += threads) counts[b] = 0;
  __syncthreads();
  constexpr int second_batch = held_in_shared - first_batch;
  uint4 r[held_in_registers];
  hold_and_count<first_batch>(in, i, count, held, counts, r);
  __syncthreads();
  stamp(1);
  uint32_t cut, above;
  find_from_top(counts, higher, k, cut, above);
  for (int b = t; b < bins; b += threads)
    if (b >= int(cut) && counts[b] != 0) atomicAdd(&onchip->bins_above_cuts[b], counts[b]);
  __syncthreads();
  if (t == 0) {  // every block's counts added before any block reads them
    cuda::atomic_ref<uint32_t, cuda::thread_scope_device> arrivals(onchip->read_arrivals);
    arrivals.fetch_add(1, cuda::memory_order_acq_rel);
    while (arrivals.load(cuda::memory_order_acquire) < gridDim.x) {
    }
  }
  __syncthreads();
  stamp(2);
  for (int b = t; b < bins; b += threads) counts[b] = __ldcg(&onchip->bins_above_cuts[b]);
  __syncthreads();
  uint32_t bin;
  find_from_top(counts, higher, k, bin, above);
  const uint32_t bound = bin << 21;
  stamp(3);
  keep_batch<true>(r, bound, kept, state);
  {
    uint4 v[first_batch];
#pragma unroll
    for (int u = 0; u < first_batch; ++u) v[u] = held[u * threads + t];
    keep_batch<true>(v, bound, kept, state);
  }
  {
    uint4 v[second_batch];
#pragma unroll
    for (int u = 0; u < second_batch; ++u) v[u] = held[(first_batch + u) * threads + t];
    keep_batch<true>(v, bound, kept, state);
  }
  // Every block read the global counts before it counted itself in, so the last may clear them.
  if (finish_if_last(k, bound, kept, state, out, stamp)) {
    for (int b = t; b < bins; b += threads) onchip->bins_above_cuts[b] = 0;
    if (t == 0) onchip->read_arrivals = 0;
  }
}

// The same read, with the bound drawn from the blocks' largest values: each block gathers its
// values in the bins at or above the one where its own count reaches `slots` (its cut), sends the
// largest `slots` of them, and counts itself in; the last block draws the k-th largest of what
// was sent and publishes it (agree_on_bound). A block whose gathered values hold every value at
// or above the bound keeps from them; any other reads all it holds again.
constexpr int most_gathered = 512;
constexpr size_t onchip_pooled_shared_bytes = std::max(
    finish_shared_bytes, sizeof(uint4) * held_in_shared * threads + (2 * bins + most_gathered) * sizeof(uint32_t));

template <int first_batch = 7>
__global__ void __launch_bounds__(threads, 1)
    topk_onchip_pooled(const uint4* in, size_t count, uint32_t k, uint32_t tag, unsigned long long* sent,
                       uint32_t* kept, State* state, int32_t* out, unsigned long long* stamps = nullptr) {
  auto stamp = [&](int at) { stamp_at(stamps, blockIdx.x * stamps_per_block + at); };
  stamp(0);
  extern __shared__ uint32_t shared[];
  uint4* held = reinterpret_cast<uint4*>(shared);
  uint32_t* counts = shared + held_in_shared * threads * 4;
  uint32_t* higher = counts + bins;
  uint32_t* gathered = higher + bins;
  __shared__ uint32_t gathered_count;
  const int t = threadIdx.x;
  const size_t i = blockIdx.x * size_t(blockDim.x) + t;
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  for (int b = t; b < bins; b += threads) counts[b] = 0;
  if (t == 0) gathered_count = 0;
  __syncthreads();
  uint4 r[held_in_registers];
  hold_and_count<first_batch>(in, i, count, held, counts, r);
  __syncthreads();
  stamp(1);
  uint32_t cut, above;
  find_from_top(counts, higher, slots, cut, above);
  auto gather = [&](uint4 v, int j) {
    if (i + j * stride >= count) return;
    for (uint32_t x : {v.x, v.y, v.z, v.w}) {
      const uint32_t key = key_of(int32_t(x));
      if (key >> 21 < cut) continue;
      const uint32_t at = atomicAdd(&gathered_count, 1u);
      if (at < most_gathered) gathered[at] = key;
    }
  };
#pragma unroll
  for (int u = 0; u < held_in_registers; ++u) gather(r[u], held_in_shared + u);
#pragma unroll
  for (int u = 0; u < held_in_shared; ++u) gather(held[u * threads + t], u);
  __syncthreads();
  const uint32_t m = min(gathered_count, uint32_t(most_gathered));
  send_largest(gathered, m, tag, sent + blockIdx.x * slots);
  __shared__ bool draws;
  __syncthreads();
  if (t == 0) {
    cuda::atomic_ref<uint32_t, cuda::thread_scope_device> arrivals(state->sample_arrivals);
    draws = arrivals.fetch_add(1, cuda::memory_order_acq_rel) == gridDim.x - 1;
  }
  __syncthreads();
  stamp(2);
  const uint32_t bound = agree_on_bound({draws, 0}, k, tag, sent, state, counts,
                                        stamps ? stamps + blockIdx.x * stamps_per_block + 8 : nullptr);
  stamp(3);
  if (gathered_count <= most_gathered && bound >= cut << 21) {
    const bool passes = t < m && gathered[t] >= bound;
    const unsigned ballot = __ballot_sync(~0u, passes);
    if (ballot != 0) {
      const unsigned lane = t & 31;
      uint32_t base = 0;
      if (lane == 0) base = atomicAdd(&state->survivors, __popc(ballot));
      const uint32_t at = __shfl_sync(~0u, base, 0) + __popc(ballot & ((1u << lane) - 1));
      if (passes && at < capacity) kept[at] = gathered[t];
    }
  } else {  // the gathered values may miss some at or above the bound: everything held, again
    keep_batch<true>(r, bound, kept, state);
    uint4 v[held_in_shared];
#pragma unroll
    for (int u = 0; u < held_in_shared; ++u) v[u] = held[u * threads + t];
    keep_batch<true>(v, bound, kept, state);
  }
  finish_if_last(k, bound, kept, state, out, stamp);
}

// The pooled bound with the whole input held on chip, so that no block stops reading while the
// bound is drawn: batch A (`batch_a` vectors a thread) comes into registers, is kept in shared
// memory and sampled (its threads' maxima, as topk_pooled samples); batch B goes into shared
// memory too; batch C (the other 6 of the 19 vectors a thread) stays in registers. A and B are
// kept from shared memory once the bound is seen, while C is in flight. B goes out
// - registers_after_arrival: into registers once the block has counted in (the drawer's once it
//   has drawn): issued before, B would be spilled under the sample's and the draw's registers,
//   and a spill waits for its load;
// - copy_before_sample: by cp.async before the sample is sent (the sample's threshold then has
//   one histogram, for which there is room beside the held input); the arrival is relaxed, as a
//   fence would wait for B;
// - copy_after_arrival: by cp.async once the block has counted in (the drawer's once it has
//   drawn), so that the drawer's loads wait behind none of its own.
enum class B { registers_after_arrival, copy_before_sample, copy_after_arrival };
// Held vectors, and the sample's histograms (one or two of `bins`) and its candidates after them
// or in B's place.
constexpr size_t held_pooled_shared_bytes = std::max(
    finish_shared_bytes, sizeof(uint4) * held_in_shared * threads + (2 * bins + most_candidates) * sizeof(uint32_t));
// spread: A is every third of a thread's 19 vectors (0, 3, ..., 18), B and C the others, so that
// the sample spans the input; and each block sends the largest keys at or above its threshold.
template <int batch_a, B order, bool whole_rows = false, bool spread = false>
__global__ void __launch_bounds__(threads, 1)
    topk_held_pooled(const uint4* in, size_t count, uint32_t k, uint32_t r, uint32_t quorum, uint32_t tag,
                     unsigned long long* sent, uint32_t* kept, State* state, int32_t* out,
                     unsigned long long* stamps = nullptr) {
  constexpr bool b_by_copy = order != B::registers_after_arrival;
  constexpr int batch_b = held_in_shared - batch_a, batch_c = held_in_registers;
  // In registers, B is kept in shared memory only after the sample's histograms there are done
  // with, the drawer's included (it keeps B after drawing).
  static_assert(b_by_copy || batch_b * threads * sizeof(uint4) >= 3 * bins * sizeof(uint32_t), "room for them");
  auto stamp = [&](int at) { stamp_at(stamps, blockIdx.x * stamps_per_block + at); };
  stamp(0);
  extern __shared__ uint32_t shared[];
  uint4* held = reinterpret_cast<uint4*>(shared);
  uint32_t* level1 = shared + (b_by_copy ? held_in_shared : batch_a) * threads * 4;
  const int t = threadIdx.x;
  const size_t i = blockIdx.x * size_t(blockDim.x) + t;
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  // Without spread, this sketch assumes every thread's B is whole (n >= 13 vectors a thread).
  static_assert(!spread || (batch_a == 7 && batch_b == 6 && b_by_copy), "spread: A, B and C of 7, 6 and 6");
  auto a_at = [](int u) { return spread ? 3 * u : u; };
  auto b_at = [](int u) { return spread ? 3 * u + 1 : batch_a + u; };
  auto c_at = [](int u) { return spread ? 3 * u + 2 : held_in_shared + u; };
  const uint4 none = make_uint4(0x80000000u, 0x80000000u, 0x80000000u, 0x80000000u);  // past the input
  auto load = [&](int j) {
    const size_t at = i + j * stride;
    return at < count ? __ldcs(in + at) : none;
  };
  // whole_rows: the block's row of slots is first written whole (tag 0, nobody's), so that the
  // drawer reads it from L2. Else its sectors that this call writes only in part, and the rows
  // of the blocks not yet counted in, come from memory, and under the read's load such a read
  // waits behind the data in flight.
  if (whole_rows && t < slots) sent[blockIdx.x * slots + t] = 0;
  uint32_t most;  // from A's registers, so that sending reads A back from shared memory
  {
    uint4 a[batch_a];
#pragma unroll
    for (int u = 0; u < batch_a; ++u) a[u] = load(a_at(u));
    most = largest_key<batch_a>([&](int u) { return a[u]; });
#pragma unroll
    for (int u = 0; u < batch_a; ++u) held[u * threads + t] = a[u];
  }
  auto copy_b = [&] {
#pragma unroll
    for (int u = 0; u < batch_b; ++u) {
      uint4* to = held + (batch_a + u) * threads + t;
      if (!spread || i + b_at(u) * stride < count)  // without spread, B is whole
        __pipeline_memcpy_async(to, in + i + b_at(u) * stride, 16);
      else
        *to = none;
    }
    __pipeline_commit();
  };
  if (order == B::copy_before_sample) copy_b();
  const Arrival arrival = send_sample<batch_a, !b_by_copy, order == B::copy_before_sample>(
      most, [&](int u) { return held[u * threads + t]; }, r, level1, level1 + bins, sent, tag, quorum, state,
      spread ? level1 + 2 * bins : nullptr);
  stamp(1);
  uint4 c[batch_c];
  auto load_rest = [&] {
    if (order == B::copy_after_arrival) copy_b();
    if (!b_by_copy) {
      uint4 b[batch_b];
#pragma unroll
      for (int u = 0; u < batch_b; ++u) b[u] = load(b_at(u));
#pragma unroll
      for (int u = 0; u < batch_b; ++u) held[(batch_a + u) * threads + t] = b[u];
    }
#pragma unroll
    for (int u = 0; u < batch_c; ++u) c[u] = load(c_at(u));
  };
  if (!arrival.draws) load_rest();  // the drawer draws first: the others wait on it
  stamp(2);
  const uint32_t bound = agree_on_bound(arrival, k, tag, sent, state, level1,
                                        stamps ? stamps + blockIdx.x * stamps_per_block + 8 : nullptr);
  if (arrival.draws) load_rest();
  stamp(3);
  if (b_by_copy) __pipeline_wait_prior(0);
  __syncthreads();  // B in shared memory for every thread
  // A and B kept three vectors at a time, so that C's registers stay free of spills.
  constexpr int group = 3;
#pragma unroll
  for (int g = 0; g < held_in_shared; g += group) {
    uint4 v[group];
#pragma unroll
    for (int u = 0; u < group; ++u) v[u] = g + u < held_in_shared ? held[(g + u) * threads + t] : none;
    keep_batch<true>(v, bound, kept, state);
  }
  stamp(7);
  keep_batch<true>(c, bound, kept, state);
  finish_if_last(k, bound, kept, state, out, stamp);
}

// ---- how long a round trip to L2 takes while the read is under way ----------------------------
// The read-only kernel's loop with `unroll` loads in flight a thread, except that the last warp
// of block 0 reads nothing and times chains of `chain` dependent loads of words in L2 (each
// load's address depends on the one before), writing each chain's mean round trip in ns into
// took[]: `probes` chains, one after another, from the kernel's start.
constexpr int probes = 24, chain = 8;
template <int unroll>
__global__ void __launch_bounds__(threads)
    read_with_probe(const uint4* in, size_t count, const uint32_t* words, uint32_t* took, uint32_t* sink) {
  if (blockIdx.x == 0 && threadIdx.x >= threads - 32) {
    if (threadIdx.x != threads - 32) return;
    uint32_t at = 0;
    for (int p = 0; p < probes; ++p) {
      unsigned long long start, end;
      asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start) : "r"(at));
      for (int c = 0; c < chain; ++c) at = __ldcg(words + 64 * ((p * chain + c) % 64) + (at & 1));
      asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(end) : "r"(at));
      took[p] = uint32_t(end - start) / chain;
    }
    if (at == 0x7fffffffu) *sink = at;
    return;
  }
  labkit::read_only_loop<unroll>(in, count, sink);
}
}  // namespace lean

int main(int argc, char** argv) {
  // "onchip": only the floors, the reference and the kernels that hold the input on chip;
  // "held": of those, only topk_held_pooled; "probe": only the read's round trips (read_with_probe);
  // "reference": only the floors and the reference; "shapes": topk_held_pooled's answers checked
  // at other n, k and inputs, untimed, and the reference's checked and timed as a call
  const std::string mode = argc > 1 ? argv[1] : "";
  const bool only_onchip = mode == "onchip" || mode == "held";
  int sms;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  for (const void* kernel : {(const void*)lean::topk_lean<false, false>, (const void*)lean::topk_lean<true, false>,
                             (const void*)lean::topk_lean<true, true>, (const void*)lean::topk_lean<true, true, true>})
    cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(lean::finish_shared_bytes));
  for (const void* kernel :
       {(const void*)lean::topk_pooled<>, (const void*)lean::topk_pooled<2, false>,
        (const void*)lean::topk_pooled<4, false>, (const void*)lean::topk_pooled<2, false, true>,
        (const void*)lean::topk_pooled<4, false, true>, (const void*)lean::topk_pooled<2, true, true>,
        (const void*)lean::topk_pooled<4, true, true>})
    cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(lean::pooled_shared_bytes));
  for (const void* kernel : {(const void*)lean::topk_onchip<7>, (const void*)lean::topk_onchip<4>})
    cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(lean::onchip_shared_bytes));
  for (const void* kernel : {(const void*)lean::topk_held_pooled<7, lean::B::registers_after_arrival>,
                             (const void*)lean::topk_held_pooled<7, lean::B::copy_before_sample>,
                             (const void*)lean::topk_held_pooled<7, lean::B::copy_after_arrival>,
                             (const void*)lean::topk_held_pooled<7, lean::B::copy_before_sample, true>,
                             (const void*)lean::topk_held_pooled<7, lean::B::copy_after_arrival, true>,
                             (const void*)lean::topk_held_pooled<5, lean::B::copy_before_sample, true>,
                             (const void*)lean::topk_held_pooled<7, lean::B::copy_before_sample, true, true>})
    cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(lean::held_pooled_shared_bytes));
  cudaFuncSetAttribute(lean::topk_onchip_pooled<7>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                       int(lean::onchip_pooled_shared_bytes));
  lean::OnchipState* onchip;
  cudaMalloc(&onchip, sizeof(lean::OnchipState));
  cudaMemset(onchip, 0, sizeof(lean::OnchipState));
  unsigned long long* sent;  // tag 0 is never a call's: zeroed slots are nobody's
  cudaMalloc(&sent, lean::max_blocks * lean::slots * 8);
  cudaMemset(sent, 0, lean::max_blocks * lean::slots * 8);
  uint32_t call_tag = 0;
  char* flush_buffer;
  cudaMalloc(&flush_buffer, size_t(256) << 20);
  uint32_t* sink;
  cudaMalloc(&sink, 4);
  const size_t n = 10000000;
  std::vector<int32_t> h;
  int32_t* in = timeline_input(n, h);
  int32_t* out;
  cudaMalloc(&out, 8192 * 4);
  uint32_t* kept;
  cudaMalloc(&kept, lean::capacity * 4);
  lean::State* state;
  cudaMalloc(&state, sizeof(lean::State));
  cudaMemset(state, 0, sizeof(lean::State));
  std::vector<int32_t> sorted = h;
  std::sort(sorted.begin(), sorted.end(), std::greater<int32_t>());
  CallTimer timer;
  allow_empty_kernel_shared_memory();
  int failures = 0;
  if (mode == "shapes") {
    // The held kernel holds at most 19 vectors a thread, and without spread needs B whole for
    // every thread (n >= 13 vectors a thread); the quorum sends k keys only while k <= 16 x blocks.
    const size_t per_vector = size_t(sms) * lean::threads * 4;  // values: one vector a thread
    int32_t* shapes_in;
    cudaMalloc(&shapes_in, 19 * per_vector * 4);
    // The held kernel's plain form and its spread form on the same input.
    auto check = [&](size_t count, uint32_t k, const char* kind, auto value_at) {
      std::vector<int32_t> values(count);
      for (size_t j = 0; j < count; ++j) values[j] = value_at(j);
      cudaMemcpy(shapes_in, values.data(), count * 4, cudaMemcpyHostToDevice);
      std::partial_sort(values.begin(), values.begin() + k, values.end(), std::greater<int32_t>());
      printf("  n %8zu k %4u %-12s", count, k, kind);
      for (auto kernel : {lean::topk_held_pooled<7, lean::B::copy_before_sample, true>,
                          lean::topk_held_pooled<7, lean::B::copy_before_sample, true, true>}) {
        call_tag = call_tag % 65535 + 1;
        kernel<<<sms, lean::threads, lean::held_pooled_shared_bytes>>>(reinterpret_cast<const uint4*>(shapes_in),
                                                                       count / 4, k, (2 * k + sms - 1) / sms, sms / 2,
                                                                       call_tag, sent, kept, state, out, nullptr);
        std::vector<int32_t> got(k);
        cudaMemcpy(got.data(), out, k * 4, cudaMemcpyDeviceToHost);
        lean::State st;
        cudaMemcpy(&st, state, sizeof st, cudaMemcpyDeviceToHost);
        const bool right = cudaGetLastError() == cudaSuccess && std::equal(got.begin(), got.end(), values.begin());
        printf(" %9u pass %-5s", st.last_survivors, right ? "ok" : "WRONG");
      }
      topk(shapes_in, count, int(k), out, 0);  // the reference, held where it fits
      std::vector<int32_t> got(k);
      cudaMemcpy(got.data(), out, k * 4, cudaMemcpyDeviceToHost);
      const bool right = cudaGetLastError() == cudaSuccess && std::equal(got.begin(), got.end(), values.begin());
      failures += !right;
      printf(" reference %-5s call %7.2f us\n", right ? "ok" : "WRONG",
             timer.alone_us([&] { topk(shapes_in, count, int(k), out, 0); }));
    };
    std::mt19937 rng(11);
    for (size_t count : {13 * per_vector, n, 19 * per_vector})
      for (uint32_t k : {1u, 10u, 1000u, 1056u, 2000u, 4000u}) {
        check(count, k, "random", [&](size_t) { return int32_t(rng()); });
        check(count, k, "ascending", [](size_t j) { return int32_t(j) - (1 << 30); });
        check(count, k, "descending", [](size_t j) { return (1 << 30) - int32_t(j); });
        check(count, k, "16 values", [&](size_t) { return int32_t(rng() % 16) * 1000; });
      }
    printf("reference: %d wrong\n", failures);
    return failures != 0;
  }
  for (int round = 0; round < 2; ++round) {
    printf("round %d\n", round);
    printf("  read-only kernel:     call %6.2f us, hidden %6.2f us\n",
           timer.alone_us([&] { labkit::read_only(in, n * 4, sink, sms, 0); }),
           timer.hidden_us([&] { labkit::read_only(in, n * 4, sink, sms, 0); }));
    printf("  empty kernel, cooperative: call %6.2f us, hidden %6.2f us\n",
           timer.alone_us([&] { launch_empty_cooperative(sms); }),
           timer.hidden_us([&] { launch_empty_cooperative(sms); }));
    if (only_onchip || mode == "probe") {  // the read at several loads in flight, and a round trip under it
      uint32_t *words, *took;
      cudaMalloc(&words, 64 * 64 * 4);
      cudaMemset(words, 0, 64 * 64 * 4);
      cudaMalloc(&took, lean::probes * 4);
      auto sweep = [&](int unroll, auto kernel) {
        const auto* vectors = reinterpret_cast<const uint4*>(in);
        const float call = timer.alone_us([&] { kernel<<<sms, lean::threads>>>(vectors, n / 4, words, took, sink); });
        cudaMemsetAsync(flush_buffer, 0, size_t(256) << 20);
        kernel<<<sms, lean::threads>>>(vectors, n / 4, words, took, sink);
        std::vector<uint32_t> t(lean::probes);
        cudaMemcpy(t.data(), took, lean::probes * 4, cudaMemcpyDeviceToHost);
        printf("  read, %d in flight a thread: call %6.2f us; mean round trip of each chain (ns):", unroll, call);
        for (uint32_t x : t) printf(" %u", x);
        printf("\n");
      };
      sweep(1, lean::read_with_probe<1>);
      sweep(2, lean::read_with_probe<2>);
      sweep(3, lean::read_with_probe<3>);
      sweep(4, lean::read_with_probe<4>);
      sweep(8, lean::read_with_probe<8>);
      cudaFree(words);
      cudaFree(took);
      if (mode == "probe") continue;
    }
    for (uint32_t k : {10u, 1000u}) {
      printf("  k=%4u reference:     call %6.2f us, hidden %6.2f us\n", k,
             timer.alone_us([&] { topk(in, n, k, out, 0); }), timer.hidden_us([&] { topk(in, n, k, out, 0); }));
      if (mode == "reference") continue;
      auto run = [&](const char* what, uint32_t arg, auto launch) {
        cudaMemset(out, 0, 8192 * 4);
        launch();
        std::vector<int32_t> got(k);
        cudaMemcpy(got.data(), out, k * 4, cudaMemcpyDeviceToHost);
        lean::State st;
        cudaMemcpy(&st, state, sizeof st, cudaMemcpyDeviceToHost);
        const bool right = cudaGetLastError() == cudaSuccess && std::equal(got.begin(), got.end(), sorted.begin());
        failures += !right;
        printf("  k=%4u %-34s %5u: %5u pass: call %6.2f us, hidden %6.2f us %s\n", k, what, arg, st.last_survivors,
               timer.alone_us(launch), timer.hidden_us(launch), right ? "ok" : "WRONG");
      };
      const auto* vectors = reinterpret_cast<const uint4*>(in);
      const size_t shared_bytes = lean::finish_shared_bytes;
      // One stamped call: when each block got where (us from the first block's start).
      const std::vector<const char*> pooled_steps = {"start",
                                                     "sample sent, counted in",
                                                     "more loads issued",
                                                     "bound seen",
                                                     "read done",
                                                     "last: finish begins",
                                                     "last: end",
                                                     "drawer: published",
                                                     "drawer: keys counted",
                                                     "drawer: bin found"};
      auto stamped = [&](const std::vector<const char*>& names, auto launch) {
        unsigned long long* stamps;
        cudaMalloc(&stamps, sms * lean::stamps_per_block * 8);
        cudaMemset(stamps, 0, sms * lean::stamps_per_block * 8);
        call_tag = call_tag % 65535 + 1;
        cudaMemsetAsync(flush_buffer, 0, size_t(256) << 20);
        launch(stamps);
        std::vector<unsigned long long> st(sms * lean::stamps_per_block);
        cudaMemcpy(st.data(), stamps, st.size() * 8, cudaMemcpyDeviceToHost);
        cudaFree(stamps);
        unsigned long long first = ~0ull;
        for (int b = 0; b < sms; ++b) first = std::min(first, st[b * lean::stamps_per_block]);
        for (int at = 0; at < int(names.size()); ++at) {
          std::vector<double> v;
          for (int b = 0; b < sms; ++b)
            if (st[b * lean::stamps_per_block + at] != 0)
              v.push_back((st[b * lean::stamps_per_block + at] - first) * 1e-3);
          if (v.empty()) continue;
          std::sort(v.begin(), v.end());
          printf("    stamp %-20s median %6.2f  last %6.2f us\n", names[at], v[v.size() / 2], v.back());
        }
        for (int b = 0; b < sms; ++b)  // the drawer's own row: its stamps past 7 are set
          if (st[b * lean::stamps_per_block + 8] != 0) {
            printf("    the drawer's own stamps:");
            for (int at = 0; at < int(names.size()); ++at)
              if (st[b * lean::stamps_per_block + at] != 0)
                printf(" %d: %.2f", at, (st[b * lean::stamps_per_block + at] - first) * 1e-3);
            printf(" us\n");
          }
      };
      if (mode != "held") {
        // The whole input held on chip, the bound agreed after the read.
        run("on chip, 7 + 6 shared + 6 registers", 7, [&] {
          lean::topk_onchip<7>
              <<<sms, lean::threads, lean::onchip_shared_bytes>>>(vectors, n / 4, k, onchip, kept, state, out);
        });
        run("on chip, 4 + 9 shared + 6 registers", 4, [&] {
          lean::topk_onchip<4>
              <<<sms, lean::threads, lean::onchip_shared_bytes>>>(vectors, n / 4, k, onchip, kept, state, out);
        });
        stamped({"start", "read and counted", "every block's counts in", "bound found", "kept, counted in",
                 "last: finish begins", "last: end"},
                [&](unsigned long long* stamps) {
                  lean::topk_onchip<7><<<sms, lean::threads, lean::onchip_shared_bytes>>>(vectors, n / 4, k, onchip,
                                                                                          kept, state, out, stamps);
                });
        auto run_onchip_pooled = [&](unsigned long long* stamps) {
          call_tag = call_tag % 65535 + 1;
          lean::topk_onchip_pooled<7><<<sms, lean::threads, lean::onchip_pooled_shared_bytes>>>(
              vectors, n / 4, k, call_tag, sent, kept, state, out, stamps);
        };
        run("on chip, each block's largest pooled", 32, [&] { run_onchip_pooled(nullptr); });
        stamped({"start", "read and counted", "largest sent, counted in", "bound seen", "kept, counted in",
                 "last: finish begins", "last: end", "", "drawer: keys counted", "drawer: bin found"},
                run_onchip_pooled);
      }
      const uint32_t pooled_r = (2 * k + sms - 1) / sms;
      auto run_held_pooled = [&](auto kernel, uint32_t quorum, unsigned long long* stamps) {
        call_tag = call_tag % 65535 + 1;
        kernel<<<sms, lean::threads, lean::held_pooled_shared_bytes>>>(vectors, n / 4, k, pooled_r, quorum, call_tag,
                                                                       sent, kept, state, out, stamps);
      };
      const uint32_t half = sms / 2;
      auto run_held = [&](const char* what, uint32_t quorum, auto kernel) {
        run(what, quorum, [&] { run_held_pooled(kernel, quorum, nullptr); });
      };
      run_held("held, 7, B in registers after; quorum", half,
               lean::topk_held_pooled<7, lean::B::registers_after_arrival>);
      run_held("held, 7, B copied before; quorum", half, lean::topk_held_pooled<7, lean::B::copy_before_sample>);
      run_held("held, 7, B copied after; quorum", half, lean::topk_held_pooled<7, lean::B::copy_after_arrival>);
      for (uint32_t quorum : {uint32_t(sms) / 3, half, uint32_t(sms)})
        run_held("held, 7, copied before, whole rows; q", quorum,
                 lean::topk_held_pooled<7, lean::B::copy_before_sample, true>);
      run_held("held, 7, copied after, whole rows; q", half,
               lean::topk_held_pooled<7, lean::B::copy_after_arrival, true>);
      run_held("held, 5, copied before, whole rows; q", half,
               lean::topk_held_pooled<5, lean::B::copy_before_sample, true>);
      run_held("held, 7, before, whole rows, spread; q", half,
               lean::topk_held_pooled<7, lean::B::copy_before_sample, true, true>);
      const std::vector<const char*> held_steps = {"start",
                                                   "sample sent, counted in",
                                                   "the rest issued",
                                                   "bound seen",
                                                   "kept, counted in",
                                                   "last: finish begins",
                                                   "last: end",
                                                   "A and B kept",
                                                   "drawer: keys counted",
                                                   "drawer: bin found",
                                                   "drawer: slots loaded"};
      for (auto kernel : {lean::topk_held_pooled<7, lean::B::copy_before_sample, true>,
                          lean::topk_held_pooled<7, lean::B::copy_after_arrival, true>})
        stamped(held_steps, [&](unsigned long long* stamps) { run_held_pooled(kernel, half, stamps); });
      if (only_onchip) continue;
      for (uint32_t passing : {2 * k, 3000u, 4900u}) {
        const uint32_t bound = lean::key_of(sorted[passing - 1]);
        run("given bound, atomic a value; pass", passing, [&] {
          lean::topk_lean<false, false>
              <<<sms, lean::threads, shared_bytes>>>(vectors, n / 4, k, bound, kept, state, out);
        });
        run("given bound, atomic a warp; pass", passing, [&] {
          lean::topk_lean<true, false>
              <<<sms, lean::threads, shared_bytes>>>(vectors, n / 4, k, bound, kept, state, out);
        });
      }
      auto run_pooled = [&](const char* what, uint32_t quorum, auto kernel) {
        run(what, quorum, [&, kernel] {
          call_tag = call_tag % 65535 + 1;
          kernel<<<sms, lean::threads, lean::pooled_shared_bytes>>>(vectors, n / 4, k, pooled_r, quorum, call_tag, 0,
                                                                    sent, kept, state, out, nullptr);
        });
      };
      for (uint32_t quorum : {uint32_t(sms) / 2, uint32_t(sms) * 3 / 4, uint32_t(sms)})
        run_pooled("pooled sample, quorum", quorum, lean::topk_pooled<>);
      stamped(pooled_steps, [&](unsigned long long* stamps) {
        lean::topk_pooled<><<<sms, lean::threads, lean::pooled_shared_bytes>>>(
            vectors, n / 4, k, pooled_r, sms / 2, call_tag, 0, sent, kept, state, out, stamps);
      });
      // The sample from the first 2 or 4 vectors a thread, no second batch: the sample in sooner.
      for (uint32_t quorum : {uint32_t(sms) / 2, uint32_t(sms)}) {
        run_pooled("pooled, 2 vectors sampled; quorum", quorum, lean::topk_pooled<2, false>);
        run_pooled("pooled, 4 vectors sampled; quorum", quorum, lean::topk_pooled<4, false>);
      }
      for (uint32_t quorum : {uint32_t(sms) / 2, uint32_t(sms)}) {
        run_pooled("pooled, 2 sampled first; quorum", quorum, lean::topk_pooled<2, false, true>);
        run_pooled("pooled, 4 sampled first; quorum", quorum, lean::topk_pooled<4, false, true>);
      }
      // The same with a second batch loaded into shared memory while the bound is drawn.
      for (uint32_t quorum : {uint32_t(sms) / 2, uint32_t(sms)}) {
        run_pooled("pooled, 2 first, second batch; quorum", quorum, lean::topk_pooled<2, true, true>);
        run_pooled("pooled, 4 first, second batch; quorum", quorum, lean::topk_pooled<4, true, true>);
      }
      stamped(pooled_steps, [&](unsigned long long* stamps) {
        lean::topk_pooled<2, true, true><<<sms, lean::threads, lean::pooled_shared_bytes>>>(
            vectors, n / 4, k, pooled_r, sms / 2, call_tag, 0, sent, kept, state, out, stamps);
      });
      const uint32_t given = lean::key_of(sorted[2 * k - 1]);
      run("pooled's read, bound given; pass", 2 * k, [&] {
        lean::topk_pooled<><<<sms, lean::threads, lean::pooled_shared_bytes>>>(vectors, n / 4, k, 1, 1, 1, given, sent,
                                                                               kept, state, out);
      });
      for (uint32_t r : {2u, 3u, 8u, 12u}) {
        if (r * 610 < 2 * k) continue;
        run("sampled bound, atomic a warp; r", r, [&] {
          lean::topk_lean<true, true><<<sms, lean::threads, shared_bytes>>>(vectors, n / 4, k, r, kept, state, out);
        });
        run("sample by cp.async first; r", r, [&] {
          lean::topk_lean<true, true, true>
              <<<sms, lean::threads, shared_bytes>>>(vectors, n / 4, k, r, kept, state, out);
        });
      }
    }
  }
  printf("failures: %d\n", failures);
  return failures != 0;
}
