// Lab 03 reference solution: radix select in one cooperative kernel, then a small sort of the
// k survivors.
//
// Instead of keeping sorted arrays per thread (the chapter: O(k) work per element, k capped
// by shared memory), it finds the k-th largest value digit by digit, as a radix sort would
// sort, but keeps only the one bucket that holds it. One kernel does all of it; its blocks
// are all resident (a cooperative launch) and wait for each other at grid barriers, so no
// step costs a launch and every decision is made on the GPU:
//  S. Every block histograms the top 11 bits of its share of a 1/16 sample. After the
//     barrier each block picks the same prefilter bucket: the one that holds the sample's
//     r-th largest, r a little above k/16 (at most k), so that almost surely at least k
//     values of the input lie at or above it.
//  0. One read of all n values (16-byte loads) histograms their top 11 bits and copies the
//     values at or above the prefilter bucket to a prefilter buffer: about 16 r values
//     plus one bucket (n / 2048 on spread-out data). After the barrier every block picks
//     the bucket that holds the k-th largest and checks that the prefilter holds it.
//  Fast finish (the usual case for k <= 4096): the prefilter is small, so block 0 alone
//     narrows it digit by digit (11, 11, 10 bits) in shared memory, collects the winners in
//     shared memory and sorts them there (bitonic network); the other blocks are done.
//  Otherwise (few distinct values, huge n, large k, or an unlucky sample) all blocks narrow
//     together: passes 1 and 2 send the values above the chosen bucket to the result and copy
//     the bucket's values to a candidate buffer (or re-read the input when it would not fit),
//     histogramming the next digit; pass 3 knows the k-th largest exactly and writes the rest.
//     Block 0 sorts k <= 4096 results; larger k go to cub::DeviceRadixSort.
// The call is one launch (two with the device sort) and usually reads the input once and 1/16.
#include "topk.h"

#include <cooperative_groups.h>
#include <cub/block/block_scan.cuh>
#include <cub/device/device_radix_sort.cuh>

#include <climits>
#include <cmath>
#include <cstdio>
#include <mutex>

namespace {

namespace cg = cooperative_groups;

struct TopkTuning {
  static constexpr int threads_per_block = 512;
  static constexpr int items_per_thread = 8;           // scalar loads in flight per thread per step
  static constexpr int vectors_per_thread = 4;         // 16-byte loads in flight per thread per step
  static constexpr int block_sort_capacity = 4096;     // larger k: cub::DeviceRadixSort
  static constexpr uint32_t fast_finish_limit = 1u << 16;  // prefilter sizes block 0 narrows alone
};

constexpr int threads = TopkTuning::threads_per_block;
constexpr int items_per_thread = TopkTuning::items_per_thread;
constexpr int vectors_per_thread = TopkTuning::vectors_per_thread;
constexpr int bin_count = 2048;  // 11-bit digits: 11 + 11 + 10 bits make the 32-bit key
constexpr int digit_count = 3;
// The sample: runs of 512 consecutive values (coalesced), one run in every 16.
constexpr size_t sample_run = 512;
constexpr size_t sample_period = 16 * sample_run;
static_assert(bin_count % threads == 0, "each thread scans whole groups of bins when selecting");

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

// What the blocks share, in device memory. The kernel zeroes all but the sample histogram
// before its first barrier; block 0 zeroes the sample histogram once every block has read
// it, so the next call finds it clean (the workspace is zeroed once when allocated).
struct SelectState {
  uint32_t sample_histogram[bin_count];
  uint32_t histogram[digit_count][bin_count];
  uint32_t prefilter_histogram[bin_count];  // digit 1 of the values in the prefilter bucket
  uint32_t prefilter_count;  // values pass 0 wanted to copy (more than capacity: overflow)
  uint32_t candidate_count[2];
  uint32_t winner_count;     // values known to be in the top k, written to `unsorted`
};

struct Buffers {
  int32_t* prefiltered;
  int32_t* candidates[2];
  uint32_t capacity;  // of each buffer; a larger bucket is re-read from the input
  int32_t* unsorted;  // the k results, before the final sort (all-blocks path)
};

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

// Reserves one slot per lane that has `take` set, with one atomic per warp instead of one
// per value (all values may land in one bucket). The whole warp must call it.
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

__device__ void zero_histogram(uint32_t* histogram) {
  for (int bin = threadIdx.x; bin < bin_count; bin += threads) histogram[bin] = 0;
}

__device__ void flush_histogram(const uint32_t* block_histogram, uint32_t* histogram) {
  for (int bin = threadIdx.x; bin < bin_count; bin += threads)
    if (block_histogram[bin] != 0) atomicAdd(&histogram[bin], block_histogram[bin]);
}

struct BucketChoice {
  uint32_t bin;
  uint32_t above;  // keys in higher bins
  uint32_t count;  // keys in the bin
};

// The bin that holds the rank-th largest key of `histogram` (in global memory, written by
// other blocks, or in this block's shared memory), scanning from the top bin. Block-wide;
// every thread gets the answer. Requires rank <= the histogram's total.
__device__ BucketChoice find_bucket(const uint32_t* histogram, uint32_t rank, bool in_global) {
  using BlockScan = cub::BlockScan<uint32_t, threads>;
  __shared__ typename BlockScan::TempStorage scan_storage;
  __shared__ BucketChoice choice;
  constexpr int bins_per_thread = bin_count / threads;
  uint32_t counts[bins_per_thread];
  uint32_t thread_total = 0;
#pragma unroll
  for (int j = 0; j < bins_per_thread; ++j) {
    const uint32_t* bin = &histogram[bin_count - 1 - (threadIdx.x * bins_per_thread + j)];
    counts[j] = in_global ? __ldcg(bin) : *bin;
    thread_total += counts[j];
  }
  uint32_t above = 0;
  BlockScan(scan_storage).ExclusiveSum(thread_total, above);
#pragma unroll
  for (int j = 0; j < bins_per_thread; ++j) {
    if (above < rank && above + counts[j] >= rank)  // exactly one thread
      choice = {bin_count - 1 - (threadIdx.x * bins_per_thread + j), above, counts[j]};
    above += counts[j];
  }
  __syncthreads();
  return choice;
}

// Sorts keys[0..k) (shared memory, k <= block_sort_capacity) largest first into out, with a
// bitonic network over the next power of two. A warp's pairs at gaps up to 32 stay inside
// its own 64-key windows, so consecutive such steps need only a warp barrier: 10 of the 55
// steps for k = 1000 wait for the whole block.
__device__ void block_sort_descending(int32_t* keys, uint32_t k, int32_t* out) {
  uint32_t size = 1;
  while (size < k) size *= 2;
  for (uint32_t i = k + threadIdx.x; i < size; i += threads) keys[i] = INT_MIN;
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

__host__ __device__ size_t sample_size(size_t n) {
  const size_t tail = n % sample_period;
  return n / sample_period * sample_run + (tail < sample_run ? tail : sample_run);
}

// The fast finish, block 0 alone: the prefilter holds every value whose top digit is
// `top.bin` or more. Narrows the bucket through digits 1 and 2 (shared-memory histograms,
// candidates in the global buffers, still in L2), collecting the winners in `keys`, then
// adds the copies of the k-th largest and sorts. When the chosen bucket is the prefilter
// bucket (the usual case), pass 0 already histogrammed its digit 1, which saves a pass.
__device__ void finish_in_block(const SelectState* state, const Buffers& buffers, uint32_t prefilter_count,
                                uint32_t prefilter_bucket, BucketChoice top, uint32_t k, uint32_t* histogram,
                                int32_t* keys, int32_t* out) {
  __shared__ uint32_t winner_count, bucket_count[2];
  if (threadIdx.x == 0) winner_count = bucket_count[0] = bucket_count[1] = 0;
  zero_histogram(histogram);
  __syncthreads();
  uint32_t k_remaining = k - top.above;
  const bool known_middle = top.bin == prefilter_bucket;
  BucketChoice middle;
  if (known_middle) {
    middle = find_bucket(state->prefilter_histogram, k_remaining, true);
  } else {
    for_each_key(buffers.prefiltered, prefilter_count, 1, [&](uint32_t key, bool valid) {
      const bool winner = valid && digit_of(key, 0) > top.bin;
      const bool in_bucket = valid && digit_of(key, 0) == top.bin;
      const uint32_t slot = warp_append_slot(winner, &winner_count);
      if (winner) keys[slot] = to_value(key);
      const uint32_t at = warp_append_slot(in_bucket, &bucket_count[0]);
      if (in_bucket) {
        buffers.candidates[0][at] = to_value(key);
        atomicAdd(&histogram[digit_of(key, 1)], 1u);
      }
    });
    __threadfence();
    __syncthreads();
    middle = find_bucket(histogram, k_remaining, false);
    zero_histogram(histogram);
    __syncthreads();
  }
  k_remaining -= middle.above;
  // Winners: a higher top digit (only in the prefilter) or the top bucket and a higher digit 1.
  for_each_key(known_middle ? buffers.prefiltered : buffers.candidates[0], known_middle ? prefilter_count : top.count,
               1, [&](uint32_t key, bool valid) {
                 const uint32_t top_digit = digit_of(key, 0), middle_digit = digit_of(key, 1);
                 const bool winner =
                     valid && (top_digit > top.bin || (top_digit == top.bin && middle_digit > middle.bin));
                 const bool in_bucket = valid && top_digit == top.bin && middle_digit == middle.bin;
                 const uint32_t slot = warp_append_slot(winner, &winner_count);
                 if (winner) keys[slot] = to_value(key);
                 const uint32_t at = warp_append_slot(in_bucket, &bucket_count[1]);
                 if (in_bucket) {
                   buffers.candidates[1][at] = to_value(key);
                   atomicAdd(&histogram[digit_of(key, 2)], 1u);
                 }
               });
  __threadfence();
  __syncthreads();
  const BucketChoice bottom = find_bucket(histogram, k_remaining, false);
  k_remaining -= bottom.above;
  const uint32_t threshold = top.bin << digit_shift(0) | middle.bin << digit_shift(1) | bottom.bin;
  for_each_key(buffers.candidates[1], middle.count, 1, [&](uint32_t key, bool valid) {
    const bool winner = valid && key > threshold;
    const uint32_t slot = warp_append_slot(winner, &winner_count);
    if (winner) keys[slot] = to_value(key);
  });
  // The winners fill keys[0..k - k_remaining); the rest are copies of the k-th largest.
  for (uint32_t i = k - k_remaining + threadIdx.x; i < k; i += threads) keys[i] = to_value(threshold);
  __syncthreads();
  block_sort_descending(keys, k, out);
}

// Pass 1 or 2 of the all-blocks path: sends the values above the chosen bucket to the result,
// copies the bucket's values to the candidate buffer (when they fit) and histograms their
// next digit.
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

// The whole selection: see the file comment for the steps. sample_rank is r of step S.
__global__ void __launch_bounds__(threads)
    radix_select_kernel(const int32_t* in, size_t n, uint32_t k, uint32_t sample_rank, SelectState* state,
                        Buffers buffers, int32_t* out, bool sort_in_block) {
  __shared__ uint32_t histogram[bin_count];
  __shared__ uint32_t bucket_histogram[bin_count];  // pass 0: digit 1 within the prefilter bucket
  __shared__ int32_t keys[TopkTuning::block_sort_capacity];
  const cg::grid_group grid = cg::this_grid();

  // Step S. Zeroing here is safe: nothing but the sample histogram is touched before the barrier.
  {
    uint32_t* words = &state->histogram[0][0];
    const size_t word_count = (sizeof(SelectState) - sizeof(state->sample_histogram)) / sizeof(uint32_t);
    for (size_t i = grid.thread_rank(); i < word_count; i += grid.size()) words[i] = 0;
  }
  const size_t sample_count = sample_size(n);
  zero_histogram(histogram);
  __syncthreads();
  const size_t sample_stride = size_t(gridDim.x) * threads;
  for (size_t first = size_t(blockIdx.x) * threads + threadIdx.x; first < sample_count;
       first += items_per_thread * sample_stride) {
    int32_t values[items_per_thread];  // all loads in flight before the first atomic
#pragma unroll
    for (int u = 0; u < items_per_thread; ++u) {
      const size_t s = first + u * sample_stride;
      values[u] = s < sample_count ? __ldg(&in[s / sample_run * sample_period + s % sample_run]) : 0;
    }
#pragma unroll
    for (int u = 0; u < items_per_thread; ++u)
      if (first + u * sample_stride < sample_count) atomicAdd(&histogram[digit_of(to_key(values[u]), 0)], 1u);
  }
  __syncthreads();
  flush_histogram(histogram, state->sample_histogram);
  grid.sync();

  // Step 0.
  bool prefilter = true;
  uint32_t prefilter_bucket = 0;  // all values, when the input is small enough to copy whole
  if (sample_count >= sample_rank)
    prefilter_bucket = find_bucket(state->sample_histogram, sample_rank, true).bin;
  else
    prefilter = n <= buffers.capacity;
  zero_histogram(histogram);
  zero_histogram(bucket_histogram);
  __syncthreads();
  for_each_key(in, n, active_blocks(n), [&](uint32_t key, bool valid) {
    if (valid) atomicAdd(&histogram[digit_of(key, 0)], 1u);
    if (prefilter) {
      const bool keep = valid && digit_of(key, 0) >= prefilter_bucket;
      const uint32_t slot = warp_append_slot(keep, &state->prefilter_count);
      if (keep && slot < buffers.capacity) buffers.prefiltered[slot] = to_value(key);
      if (valid && digit_of(key, 0) == prefilter_bucket) atomicAdd(&bucket_histogram[digit_of(key, 1)], 1u);
    }
  });
  __syncthreads();
  flush_histogram(histogram, state->histogram[0]);
  flush_histogram(bucket_histogram, state->prefilter_histogram);
  grid.sync();

  if (blockIdx.x == 0) zero_histogram(state->sample_histogram);  // every block has read it
  const BucketChoice top = find_bucket(state->histogram[0], k, true);
  const uint32_t prefilter_count = __ldcg(&state->prefilter_count);
  // The prefilter holds the chosen bucket and everything above it.
  const bool prefilter_holds = prefilter && prefilter_count <= buffers.capacity && top.bin >= prefilter_bucket;
  if (prefilter_holds && sort_in_block && prefilter_count <= TopkTuning::fast_finish_limit) {
    if (blockIdx.x == 0)
      finish_in_block(state, buffers, prefilter_count, prefilter_bucket, top, k, histogram, keys, out);
    return;
  }

  // The all-blocks path. Every block makes the same choices from the same histograms.
  uint32_t prefix = top.bin << digit_shift(0);
  uint32_t k_remaining = k - top.above;
  const bool buffered0 = top.count <= buffers.capacity;
  narrow_pass<1>(prefilter_holds ? buffers.prefiltered : in, prefilter_holds ? prefilter_count : n, prefix, buffered0,
                 state, buffers, histogram);
  grid.sync();

  const BucketChoice middle = find_bucket(state->histogram[1], k_remaining, true);
  prefix |= middle.bin << digit_shift(1);
  k_remaining -= middle.above;
  const bool buffered1 = middle.count <= buffers.capacity;
  narrow_pass<2>(buffered0 ? buffers.candidates[0] : in, buffered0 ? __ldcg(&state->candidate_count[0]) : n, prefix,
                 buffered1, state, buffers, histogram);
  grid.sync();

  // Pass 3: the k-th largest key is now known; the rest of the winners above it, then copies.
  const BucketChoice bottom = find_bucket(state->histogram[2], k_remaining, true);
  const uint32_t threshold = prefix | bottom.bin;
  k_remaining -= bottom.above;
  const uint32_t group_mask = decided_mask(1);
  const int32_t* src = buffered1 ? buffers.candidates[1] : in;
  const size_t count = buffered1 ? __ldcg(&state->candidate_count[1]) : n;
  for_each_key(src, count, active_blocks(count), [&](uint32_t key, bool valid) {
    const bool winner = valid && (key & group_mask) == (threshold & group_mask) && key > threshold;
    const uint32_t slot = warp_append_slot(winner, &state->winner_count);
    if (winner) buffers.unsorted[slot] = to_value(key);
  });
  for (size_t i = k - k_remaining + grid.thread_rank(); i < k; i += grid.size()) buffers.unsorted[i] = to_value(threshold);
  if (!sort_in_block) return;  // cub::DeviceRadixSort follows on the stream
  grid.sync();
  if (blockIdx.x != 0) return;
  for (uint32_t i = threadIdx.x; i < k; i += threads) keys[i] = __ldcg(&buffers.unsorted[i]);
  block_sort_descending(keys, k, out);
}

// One device allocation, carved into the pieces the kernel needs; the state comes first so
// that it stays in place when the allocation is reused for another n or k.
struct Workspace {
  size_t prefiltered_offset = 0, candidates_offset[2] = {}, unsorted_offset = 0, sort_offset = 0, total = 0;
  size_t sort_bytes = 0;
  uint32_t capacity = 0;

  Workspace(size_t n, int k) {
    // Spread-out data leaves ~n/2048 values in a bucket (the prefilter ~16 k more); a bucket
    // above n/16 (few distinct values) is cheaper to re-read from the input than to copy.
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
  unsigned grid = 0;  // blocks that fit on the device at once, as a cooperative launch needs
};

char* scratch_for(size_t bytes, unsigned& grid, cudaStream_t stream) {
  constexpr int max_devices = 64;
  static DeviceScratch scratch[max_devices];
  static std::mutex mutex;
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || device >= max_devices) return nullptr;
  std::lock_guard<std::mutex> lock(mutex);
  DeviceScratch& mine = scratch[device];
  if (mine.grid == 0) {
    int sm_count = 0, per_sm = 0;
    cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, device);
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, radix_select_kernel, threads, 0);
    mine.grid = unsigned(sm_count * (per_sm > 0 ? per_sm : 1));
  }
  grid = mine.grid;
  if (mine.bytes < bytes) {
    if (mine.workspace != nullptr) cudaFree(mine.workspace);  // waits for calls still using it
    mine.workspace = nullptr;
    mine.bytes = 0;
    if (cudaMalloc(&mine.workspace, bytes) != cudaSuccess) return nullptr;
    mine.bytes = bytes;
    // The kernel leaves the sample histogram zeroed for the next call; this is the first.
    if (cudaMemsetAsync(mine.workspace, 0, sizeof(SelectState), stream) != cudaSuccess) return nullptr;
  }
  return mine.workspace;
}

// r of step S: the sample's r-th largest lies ~16 r deep in the input, so r a few standard
// deviations above k/16 leaves k values above it all but surely (and r = k for sure). When it
// does not, the kernel sees it and takes the all-blocks path.
uint32_t sample_rank(size_t n, int k) {
  const double expected = double(k) * double(sample_size(n)) / double(n);
  const double rank = std::ceil(expected + 4 * std::sqrt(expected) + 8);
  return rank >= double(k) ? uint32_t(k) : uint32_t(rank);
}

}  // namespace

extern "C" void topk(const int32_t* d_in, size_t n, int k, int32_t* d_out, cudaStream_t stream) {
  if (k < 1 || size_t(k) > n || n > UINT32_MAX) {
    std::fprintf(stderr, "topk: needs 1 <= k <= n < 2^32 (k = %d, n = %zu); d_out was not written\n", k, n);
    return;
  }
  const Workspace plan(n, k);
  unsigned grid = 0;
  char* workspace = scratch_for(plan.total, grid, stream);
  if (workspace == nullptr) return;  // the CUDA error stays visible to the caller

  auto* state = reinterpret_cast<SelectState*>(workspace);
  Buffers buffers{reinterpret_cast<int32_t*>(workspace + plan.prefiltered_offset),
                  {reinterpret_cast<int32_t*>(workspace + plan.candidates_offset[0]),
                   reinterpret_cast<int32_t*>(workspace + plan.candidates_offset[1])},
                  plan.capacity,
                  reinterpret_cast<int32_t*>(workspace + plan.unsorted_offset)};
  uint32_t k32 = uint32_t(k), rank = sample_rank(n, k);
  bool sort_in_block = k <= TopkTuning::block_sort_capacity;
  void* args[] = {&d_in, &n, &k32, &rank, &state, &buffers, &d_out, &sort_in_block};
  if (cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(radix_select_kernel), dim3(grid), dim3(threads), args,
                                  0, stream) != cudaSuccess)
    return;
  if (!sort_in_block) {
    size_t sort_bytes = plan.sort_bytes;
    cub::DeviceRadixSort::SortKeysDescending(workspace + plan.sort_offset, sort_bytes, buffers.unsorted, d_out, k, 0,
                                             32, stream);
  }
}
