// Lab 03 reference solution: radix select, then a small sort of the k survivors.
//
// Instead of keeping sorted arrays per thread (the chapter: O(k) work per element, k capped
// by shared memory), it finds the k-th largest value digit by digit, as a radix sort would
// sort, but keeps only the one bucket that holds it:
//  0. A sample pass histograms the top 11 bits of 1/16 of the input and picks the bucket
//     holding the sample's k-th largest. At least k values of the input lie at or above
//     that bucket (the sample is part of the input), so the answer lies there too.
//  1. Pass 0 reads all n values once, histograms their top 11 bits and, on the way, copies
//     the values at or above the sample's bucket to a prefilter buffer (a few times k plus
//     one bucket, n / 2048, on spread-out data). The last block to finish picks the bucket
//     that holds the k-th largest: everything above it is in the top k, everything below out.
//  2. Passes 1 and 2 write the values above the chosen bucket straight to the result, copy
//     the chosen bucket's values to a small candidate buffer and histogram their next
//     digit (11, then 10 bits). They read the prefilter buffer, not the input, unless it
//     overflowed (few distinct values); pass 2 reads only pass 1's candidates.
//  3. Pass 3 knows the k-th largest value exactly: it writes the rest of the values above
//     it and as many copies of it as are still missing, then sorts the k results.
// Every decision is made on the GPU by the last block of a pass (no round trip to the host),
// so the whole call is six launches on the stream and usually reads the input once and 1/16.
#include "topk.h"

#include <cub/block/block_scan.cuh>
#include <cub/device/device_radix_sort.cuh>

#include <climits>
#include <cstdio>

namespace {

struct TopkTuning {
  static constexpr int threads_per_block = 512;
  static constexpr int items_per_thread = 8;           // loads in flight per thread per step
  static constexpr int block_sort_capacity = 4096;     // larger k: cub::DeviceRadixSort
};

constexpr int threads = TopkTuning::threads_per_block;
constexpr int items_per_thread = TopkTuning::items_per_thread;
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

// Everything the passes hand to each other, in device memory, zeroed before pass 0.
struct SelectState {
  uint32_t histogram[digit_count][bin_count];
  uint32_t prefix;            // the k-th largest key's digits found so far, in place
  uint32_t k_remaining;       // how many of the top k have keys that start with `prefix`
  uint32_t buffered[2];       // pass j + 1 copies the chosen bucket into candidates[j]
  uint32_t candidate_count[2];
  uint32_t winner_count;      // values known to be in the top k, written to `unsorted`
  uint32_t tie_count;         // copies of the k-th largest value seen by pass 3
  uint32_t blocks_done[digit_count + 1];
  uint32_t sample_histogram[bin_count];
  uint32_t sample_blocks_done;
  uint32_t prefilter_on;      // the sample held k values: pass 0 copies those at or above
  uint32_t prefilter_bucket;  // this digit-0 bucket to `prefiltered`
  uint32_t prefilter_count;   // values pass 0 wanted to copy (more than capacity: overflow)
};

struct Buffers {
  int32_t* prefiltered;
  int32_t* candidates[2];
  uint32_t capacity;  // of each candidate buffer; a larger bucket is re-read from the input
  int32_t* unsorted;  // the k results, before the final sort
};

// Blocks with no work leave at once, so small candidate sets cost a few blocks, not a grid.
__device__ __forceinline__ unsigned active_blocks(size_t count) {
  const size_t per_block = size_t(threads) * items_per_thread;
  const size_t wanted = (count + per_block - 1) / per_block;
  return unsigned(wanted < 1 ? 1 : wanted < gridDim.x ? wanted : gridDim.x);
}

// Calls visit(key, valid) on every value of src[0..count), the whole warp together (so the
// visitor may use warp votes), `items_per_thread` loads in flight per thread.
template <class Visit>
__device__ __forceinline__ void for_each_key(const int32_t* src, size_t count, unsigned blocks, Visit visit) {
  const unsigned lane = threadIdx.x % 32;
  const size_t stride = size_t(blocks) * threads;
  size_t warp_base = size_t(blockIdx.x) * threads + (threadIdx.x - lane);
  for (; warp_base + 31 + (items_per_thread - 1) * stride < count; warp_base += items_per_thread * stride) {
    int32_t values[items_per_thread];
#pragma unroll
    for (int u = 0; u < items_per_thread; ++u) values[u] = src[warp_base + lane + u * stride];
#pragma unroll
    for (int u = 0; u < items_per_thread; ++u) visit(to_key(values[u]), true);
  }
  for (; warp_base < count; warp_base += stride) {
    const size_t i = warp_base + lane;
    const bool valid = i < count;
    visit(valid ? to_key(src[i]) : 0u, valid);
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

// True in the last block to finish, which then sees every other block's writes.
__device__ bool is_last_block(uint32_t* blocks_done, unsigned blocks) {
  __shared__ bool last;
  __threadfence();  // this thread's global writes are visible before its block is counted
  __syncthreads();
  if (threadIdx.x == 0) last = atomicAdd(blocks_done, 1u) == blocks - 1;
  __syncthreads();
  return last;
}

struct BucketChoice {
  uint32_t bin;
  uint32_t above;  // keys in higher bins
  uint32_t count;  // keys in the bin
};

// The bin that holds the rank-th largest key of `histogram`, scanning from the top bin.
// Block-wide; every thread gets the answer. Requires rank <= the histogram's total.
__device__ BucketChoice find_bucket(const uint32_t* histogram, uint32_t rank) {
  using BlockScan = cub::BlockScan<uint32_t, threads>;
  __shared__ typename BlockScan::TempStorage scan_storage;
  __shared__ BucketChoice choice;
  constexpr int bins_per_thread = bin_count / threads;
  uint32_t counts[bins_per_thread];
  uint32_t thread_total = 0;
  for (int j = 0; j < bins_per_thread; ++j) {
    counts[j] = __ldcg(&histogram[bin_count - 1 - (threadIdx.x * bins_per_thread + j)]);
    thread_total += counts[j];
  }
  uint32_t above = 0;
  BlockScan(scan_storage).ExclusiveSum(thread_total, above);
  for (int j = 0; j < bins_per_thread; ++j) {
    if (above < rank && above + counts[j] >= rank)  // exactly one thread
      choice = {bin_count - 1 - (threadIdx.x * bins_per_thread + j), above, counts[j]};
    above += counts[j];
  }
  __syncthreads();
  return choice;
}

// Narrows the prefix to the bin of `digit` that holds the k_remaining-th largest key among
// those that start with it.
__device__ void select_bucket(SelectState* state, int digit, uint32_t k_remaining, uint32_t capacity) {
  const BucketChoice choice = find_bucket(state->histogram[digit], k_remaining);
  if (threadIdx.x != 0) return;
  state->prefix |= choice.bin << digit_shift(digit);
  state->k_remaining = k_remaining - choice.above;
  if (digit < 2) state->buffered[digit] = choice.count <= capacity;
}

// Sorts unsorted[0..k) largest first into out, k <= block_sort_capacity (bitonic network).
__device__ void block_sort_descending(const int32_t* unsorted, uint32_t k, int32_t* out) {
  __shared__ int32_t keys[TopkTuning::block_sort_capacity];
  uint32_t size = 1;
  while (size < k) size *= 2;
  for (uint32_t i = threadIdx.x; i < size; i += threads) keys[i] = i < k ? __ldcg(&unsorted[i]) : INT_MIN;
  __syncthreads();
  for (uint32_t run = 2; run <= size; run *= 2) {
    for (uint32_t gap = run / 2; gap > 0; gap /= 2) {
      for (uint32_t pair = threadIdx.x; pair < size / 2; pair += threads) {
        const uint32_t lo = 2 * pair - (pair & (gap - 1));
        const bool descending = (lo & run) == 0;  // the final run (run == size) is descending
        const int32_t a = keys[lo], b = keys[lo + gap];
        if (descending ? a < b : a > b) {
          keys[lo] = b;
          keys[lo + gap] = a;
        }
      }
      __syncthreads();
    }
  }
  for (uint32_t i = threadIdx.x; i < k; i += threads) out[i] = keys[i];
}

__host__ __device__ size_t sample_size(size_t n) {
  const size_t tail = n % sample_period;
  return n / sample_period * sample_run + (tail < sample_run ? tail : sample_run);
}

// Histograms digit 0 of the sample; the last block picks the prefilter bucket.
__global__ void __launch_bounds__(threads) sample_histogram_kernel(const int32_t* in, size_t n, uint32_t k,
                                                                   SelectState* state) {
  __shared__ uint32_t histogram[bin_count];
  const size_t count = sample_size(n);
  const unsigned blocks = active_blocks(count);
  if (blockIdx.x >= blocks) return;
  zero_histogram(histogram);
  __syncthreads();
  for (size_t s = size_t(blockIdx.x) * threads + threadIdx.x; s < count; s += size_t(blocks) * threads) {
    const size_t i = s / sample_run * sample_period + s % sample_run;
    atomicAdd(&histogram[digit_of(to_key(in[i]), 0)], 1u);
  }
  __syncthreads();
  flush_histogram(histogram, state->sample_histogram);
  if (!is_last_block(&state->sample_blocks_done, blocks) || count < k) return;
  const BucketChoice choice = find_bucket(state->sample_histogram, k);
  if (threadIdx.x == 0) {
    state->prefilter_bucket = choice.bin;
    state->prefilter_on = 1;
  }
}

__global__ void __launch_bounds__(threads) top_digit_histogram_kernel(const int32_t* in, size_t n, uint32_t k,
                                                                      SelectState* state, Buffers buffers) {
  __shared__ uint32_t histogram[bin_count];
  const unsigned blocks = active_blocks(n);
  if (blockIdx.x >= blocks) return;
  const bool prefilter = state->prefilter_on;
  const uint32_t prefilter_bucket = state->prefilter_bucket;
  zero_histogram(histogram);
  __syncthreads();
  for_each_key(in, n, blocks, [&](uint32_t key, bool valid) {
    if (valid) atomicAdd(&histogram[digit_of(key, 0)], 1u);
    if (prefilter) {
      const bool keep = valid && digit_of(key, 0) >= prefilter_bucket;
      const uint32_t slot = warp_append_slot(keep, &state->prefilter_count);
      if (keep && slot < buffers.capacity) buffers.prefiltered[slot] = to_value(key);
    }
  });
  __syncthreads();
  flush_histogram(histogram, state->histogram[0]);
  if (is_last_block(&state->blocks_done[0], blocks)) select_bucket(state, 0, k, buffers.capacity);
}

// Pass 1 or 2: sends the values above the chosen bucket to the result, copies the bucket's
// values to the candidate buffer (when they fit) and histograms their next digit.
template <int Pass>
__global__ void __launch_bounds__(threads)
    narrow_pass_kernel(const int32_t* in, size_t n, SelectState* state, Buffers buffers) {
  static_assert(Pass == 1 || Pass == 2, "passes 1 and 2 narrow; pass 0 and 3 have their own kernels");
  __shared__ uint32_t histogram[bin_count];
  // Pass 1 reads the prefilter buffer when it holds every value at or above the chosen bucket.
  const bool from_prefilter = Pass == 1 && state->prefilter_on && state->prefilter_count <= buffers.capacity;
  const bool from_buffer = Pass == 2 && state->buffered[0];
  const int32_t* src = from_buffer ? buffers.candidates[0] : from_prefilter ? buffers.prefiltered : in;
  const size_t count = from_buffer ? state->candidate_count[0] : from_prefilter ? state->prefilter_count : n;
  const unsigned blocks = active_blocks(count);
  if (blockIdx.x >= blocks) return;

  const uint32_t prefix = state->prefix;
  const uint32_t group_mask = decided_mask(Pass - 2);  // keys outside the group were settled earlier
  const uint32_t bucket_mask = decided_mask(Pass - 1);
  const bool copy_bucket = state->buffered[Pass - 1];
  int32_t* candidates = buffers.candidates[Pass - 1];
  zero_histogram(histogram);
  __syncthreads();
  for_each_key(src, count, blocks, [&](uint32_t key, bool valid) {
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
  if (is_last_block(&state->blocks_done[Pass], blocks))
    select_bucket(state, Pass, state->k_remaining, buffers.capacity);
}

// Pass 3: the k-th largest key is `prefix`. Writes the remaining values above it, then
// k_remaining copies of it, and (for small k) sorts the results in the last block.
__global__ void __launch_bounds__(threads) gather_kernel(const int32_t* in, size_t n, uint32_t k, SelectState* state,
                                                         Buffers buffers, int32_t* out, bool sort_in_block) {
  const bool from_buffer = state->buffered[1];
  const int32_t* src = from_buffer ? buffers.candidates[1] : in;
  const size_t count = from_buffer ? state->candidate_count[1] : n;
  const unsigned blocks = active_blocks(count);
  if (blockIdx.x >= blocks) return;

  const uint32_t threshold = state->prefix;
  const uint32_t k_remaining = state->k_remaining;
  const uint32_t group_mask = decided_mask(1);
  for_each_key(src, count, blocks, [&](uint32_t key, bool valid) {
    const bool in_group = valid && (key & group_mask) == (threshold & group_mask);
    const bool winner = in_group && key > threshold;
    const bool tie = valid && key == threshold;
    const uint32_t slot = warp_append_slot(winner, &state->winner_count);
    if (winner) buffers.unsorted[slot] = to_value(key);
    const uint32_t copy = warp_append_slot(tie, &state->tie_count);
    if (tie && copy < k_remaining) buffers.unsorted[k - k_remaining + copy] = to_value(key);
  });
  if (is_last_block(&state->blocks_done[3], blocks) && sort_in_block) block_sort_descending(buffers.unsorted, k, out);
}

// One temporary allocation, carved into the pieces the passes need.
struct Workspace {
  size_t state_offset = 0, prefiltered_offset = 0, candidates_offset[2] = {}, unsorted_offset = 0, sort_offset = 0, total = 0;
  size_t sort_bytes = 0;
  uint32_t capacity = 0;

  Workspace(size_t n, int k) {
    // Spread-out data leaves ~n/2048 values in a bucket (the prefilter 16 k more); a bucket
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
    state_offset = take(sizeof(SelectState));
    prefiltered_offset = take(capacity * sizeof(int32_t));
    candidates_offset[0] = take(capacity * sizeof(int32_t));
    candidates_offset[1] = take(capacity * sizeof(int32_t));
    unsorted_offset = take(size_t(k) * sizeof(int32_t));
    sort_offset = take(sort_bytes);
  }
};

// Without this the pool hands its memory back to the driver at every synchronisation, and
// each call pays for a fresh allocation of its buffers.
void keep_pool_memory_between_calls() {
  static const bool done = [] {
    int device = 0;
    cudaMemPool_t pool;
    cudaGetDevice(&device);
    cudaDeviceGetDefaultMemPool(&pool, device);
    uint64_t keep_all = UINT64_MAX;
    cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep_all);
    return true;
  }();
  (void)done;
}

// Enough blocks to fill every SM once; the kernels stride over larger inputs.
unsigned grid_size() {
  static const unsigned blocks = [] {
    int device = 0, sm_count = 0, per_sm = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, device);
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, narrow_pass_kernel<1>, threads, 0);
    return unsigned(sm_count * (per_sm > 0 ? per_sm : 1));
  }();
  return blocks;
}

}  // namespace

extern "C" void topk(const int32_t* d_in, size_t n, int k, int32_t* d_out, cudaStream_t stream) {
  if (k < 1 || size_t(k) > n || n > UINT32_MAX) {
    std::fprintf(stderr, "topk: needs 1 <= k <= n < 2^32 (k = %d, n = %zu); d_out was not written\n", k, n);
    return;
  }
  keep_pool_memory_between_calls();
  const Workspace plan(n, k);
  char* workspace = nullptr;
  if (cudaMallocAsync(&workspace, plan.total, stream) != cudaSuccess) return;  // the error stays visible

  auto* state = reinterpret_cast<SelectState*>(workspace + plan.state_offset);
  const Buffers buffers{reinterpret_cast<int32_t*>(workspace + plan.prefiltered_offset),
                        {reinterpret_cast<int32_t*>(workspace + plan.candidates_offset[0]),
                         reinterpret_cast<int32_t*>(workspace + plan.candidates_offset[1])},
                        plan.capacity,
                        reinterpret_cast<int32_t*>(workspace + plan.unsorted_offset)};
  const bool sort_in_block = k <= TopkTuning::block_sort_capacity;
  const unsigned grid = grid_size();

  cudaMemsetAsync(state, 0, sizeof(SelectState), stream);
  sample_histogram_kernel<<<grid, threads, 0, stream>>>(d_in, n, uint32_t(k), state);
  top_digit_histogram_kernel<<<grid, threads, 0, stream>>>(d_in, n, uint32_t(k), state, buffers);
  narrow_pass_kernel<1><<<grid, threads, 0, stream>>>(d_in, n, state, buffers);
  narrow_pass_kernel<2><<<grid, threads, 0, stream>>>(d_in, n, state, buffers);
  gather_kernel<<<grid, threads, 0, stream>>>(d_in, n, uint32_t(k), state, buffers, d_out, sort_in_block);
  if (!sort_in_block) {
    size_t sort_bytes = plan.sort_bytes;
    cub::DeviceRadixSort::SortKeysDescending(workspace + plan.sort_offset, sort_bytes, buffers.unsorted, d_out, k,
                                             0, 32, stream);
  }
  cudaFreeAsync(workspace, stream);
}
