// Lab 10 reference: a parallel three-way quicksort driven by dynamic parallelism (CDP2).
//
//   large segment (> large_min keys): one grid partitions it. Every block takes a tile of
//     4096 keys, splits them into < pivot, == pivot, > pivot, and claims room for its "<"
//     and ">" keys with one atomicAdd each on the segment's two cursors; "<" keys fill the
//     other buffer from the left, ">" keys from the right. The keys equal to the pivot are
//     already in their final place as a run in the middle: they are not moved at all, just
//     written as the pivot value into d_keys. The last block to finish (a ticket counter)
//     launches the two children and the fill of the middle, fire-and-forget.
//   medium segment (<= large_min keys): one block sorts it all, with its own stack: the same
//     three-way tile partition, a block-wide running cursor instead of atomics, down to
//     segments of sort_max keys, which a bitonic sort in shared memory finishes.
//
// Keys move between d_keys and a scratch buffer of n keys (d_temp): a partition reads one and
// writes the other, so no level copies anything back; wherever a segment ends, the last step
// (a bitonic sort, or the fill of a pivot run) writes into d_keys. The pivot is the median of
// nine keys at pseudo-random places of the segment, so sorted, reversed and organ-pipe inputs
// split as well as random ones, and three-way partitioning makes all-equal and few-distinct
// inputs cheap (a run of equal keys leaves the recursion at once).
#include "quicksort.h"

#include <climits>

namespace {

constexpr int threads = 256;                  // every kernel's block
constexpr int warps = threads / 32;
constexpr int rows = 16;                      // keys per thread in a partition tile
constexpr unsigned tile = threads * rows;     // 4096 keys per block and step
constexpr unsigned large_min = 1u << 15;      // larger segments get a grid, smaller one block
constexpr unsigned sort_max = 2048;           // segments this short: bitonic sort in shared memory
constexpr int max_large_depth = 16;           // deeper large segments go to one block (the
                                              // device runtime allows 24 levels of launches)
constexpr int stack_capacity = 64;            // a block's segment stack (log2(n / sort_max) + 2 used)
constexpr unsigned full_mask = 0xffffffffu;

// The two cursors and the ticket counter of one large segment being partitioned. Slot
// begin / large_min: two large segments that exist at the same time are disjoint and longer
// than large_min, so their first keys are in different slots.
struct SegmentState {
  unsigned less;     // "<" keys placed so far
  unsigned greater;  // ">" keys placed so far
  unsigned done;     // blocks finished
  unsigned unused;
};

struct Buffers {
  uint32_t* keys;
  uint32_t* scratch;
  SegmentState* states;
};

// A segment [begin, end) whose keys are in keys (in_keys) or in scratch (otherwise).
struct Segment {
  unsigned begin;
  unsigned end;
  int in_keys;
};

__device__ __forceinline__ const uint32_t* source_of(const Buffers& b, const Segment& s) {
  return s.in_keys ? b.keys : b.scratch;
}
__device__ __forceinline__ uint32_t* destination_of(const Buffers& b, const Segment& s) {
  return s.in_keys ? b.scratch : b.keys;
}

__device__ __forceinline__ unsigned mix(unsigned x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}

// The median of nine keys at pseudo-random places: the same for every block of a segment,
// and no input pattern (sorted, organ-pipe) puts an extreme key there on purpose.
__device__ uint32_t choose_pivot(const uint32_t* src, unsigned begin, unsigned end) {
  const unsigned size = end - begin;
  uint32_t sample[9];
  for (int i = 0; i < 9; ++i) {
    const unsigned place = mix(begin * 0x9e3779b9u + end + unsigned(i) * 0x85ebca6bu) % size;
    sample[i] = src[begin + place];
  }
  for (int i = 1; i < 9; ++i)
    for (int j = i; j > 0 && sample[j - 1] > sample[j]; --j) {
      const uint32_t t = sample[j];
      sample[j] = sample[j - 1];
      sample[j - 1] = t;
    }
  return sample[4];
}

// Exclusive prefix sum over the block's threads, one value each; `total` gets the sum.
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
  unsigned before = 0;
  total = 0;
  for (int w = 0; w < warps; ++w) {
    const unsigned sum = warp_sums[w];
    before += w < warp ? sum : 0u;
    total += sum;
  }
  __syncthreads();  // warp_sums may be written again by the next scan
  return before + inclusive - value;
}

struct TileShared {
  unsigned offsets[rows * warps];  // per (row, warp): "<" count | ">" count << 16, then their scan
  unsigned warp_sums[warps];
  unsigned less_base;
  unsigned greater_base;
};

// Three-way partition of one tile src[tile_begin, tile_end) of segment [begin, end): "<"
// keys go to dst[begin + cursor[0] ...], ">" keys to dst[end - 1 - cursor[1] ...], each tile
// claiming its room with one atomicAdd per side (cursors in global memory for a grid, in
// shared memory for a block). Keys equal to the pivot are left out. Key r of thread t is
// tile_begin + r * threads + t, so loads and (mostly) stores are coalesced.
__device__ void partition_tile(const uint32_t* src, uint32_t* dst, unsigned begin, unsigned end, unsigned tile_begin,
                               unsigned tile_end, uint32_t pivot, unsigned* cursors, TileShared& sh) {
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  const unsigned below = (1u << lane) - 1u;
  uint32_t key[rows];
  bool valid[rows];
#pragma unroll
  for (int r = 0; r < rows; ++r) {
    const unsigned i = tile_begin + unsigned(r) * threads + threadIdx.x;
    valid[r] = i < tile_end;
    key[r] = valid[r] ? src[i] : 0u;
  }
#pragma unroll
  for (int r = 0; r < rows; ++r) {
    const unsigned less = __ballot_sync(full_mask, valid[r] && key[r] < pivot);
    const unsigned greater = __ballot_sync(full_mask, valid[r] && key[r] > pivot);
    if (lane == 0) sh.offsets[r * warps + warp] = unsigned(__popc(less)) | unsigned(__popc(greater)) << 16;
  }
  __syncthreads();
  // Each count is at most 4096, so the two halves never carry into each other.
  const unsigned count = threadIdx.x < rows * warps ? sh.offsets[threadIdx.x] : 0u;
  unsigned total = 0;
  const unsigned offset = block_exclusive_scan(count, sh.warp_sums, total);
  if (threadIdx.x < rows * warps) sh.offsets[threadIdx.x] = offset;
  if (threadIdx.x == 0) {
    sh.less_base = atomicAdd(&cursors[0], total & 0xffffu);
    sh.greater_base = atomicAdd(&cursors[1], total >> 16);
  }
  __syncthreads();
#pragma unroll
  for (int r = 0; r < rows; ++r) {
    const unsigned less = __ballot_sync(full_mask, valid[r] && key[r] < pivot);
    const unsigned greater = __ballot_sync(full_mask, valid[r] && key[r] > pivot);
    const unsigned packed = sh.offsets[r * warps + warp];
    if (valid[r] && key[r] < pivot)
      dst[begin + sh.less_base + (packed & 0xffffu) + unsigned(__popc(less & below))] = key[r];
    else if (valid[r] && key[r] > pivot)
      dst[end - 1u - (sh.greater_base + (packed >> 16) + unsigned(__popc(greater & below)))] = key[r];
  }
  __syncthreads();  // sh is reused by the next tile
}

// Sorts src[0, size) into out[0, size) (size <= sort_max) with a bitonic network in shared
// memory, padded to a power of two with the largest key.
__device__ void block_bitonic_sort(const uint32_t* src, uint32_t* out, unsigned size, uint32_t* s) {
  unsigned padded = 1;
  while (padded < size) padded <<= 1;
  for (unsigned i = threadIdx.x; i < padded; i += threads) s[i] = i < size ? src[i] : UINT_MAX;
  __syncthreads();
  for (unsigned k = 2; k <= padded; k <<= 1)
    for (unsigned j = k >> 1; j > 0; j >>= 1) {
      for (unsigned i = threadIdx.x; i < padded; i += threads) {
        const unsigned partner = i ^ j;
        if (partner > i) {
          const uint32_t a = s[i];
          const uint32_t b = s[partner];
          const bool ascending = (i & k) == 0;
          if ((a > b) == ascending && a != b) {
            s[i] = b;
            s[partner] = a;
          }
        }
      }
      __syncthreads();
    }
  for (unsigned i = threadIdx.x; i < size; i += threads) out[i] = s[i];
  __syncthreads();  // s is reused by the next segment
}

__global__ void fill_kernel(uint32_t* keys, unsigned count, uint32_t value) {
  for (unsigned i = blockIdx.x * threads + threadIdx.x; i < count; i += gridDim.x * threads) keys[i] = value;
}

// One block sorts a whole segment: a stack of segments, the smaller child first so the stack
// stays shallow; three-way tile partitions down to sort_max keys, then a bitonic sort.
__global__ void __launch_bounds__(threads) block_quicksort_kernel(Buffers buffers, Segment root) {
  __shared__ TileShared tile_shared;
  __shared__ uint32_t sort_space[sort_max];
  __shared__ Segment stack[stack_capacity];
  __shared__ int top;
  __shared__ Segment current;
  __shared__ uint32_t pivot;
  __shared__ unsigned cursors[2];
  if (threadIdx.x == 0) {
    stack[0] = root;
    top = 1;
  }
  __syncthreads();
  for (;;) {
    const int remaining = top;
    __syncthreads();  // every thread has read `top` before thread 0 pops
    if (remaining == 0) break;
    if (threadIdx.x == 0) current = stack[--top];
    __syncthreads();
    const Segment seg = current;
    const uint32_t* src = source_of(buffers, seg);
    const unsigned size = seg.end - seg.begin;
    if (size <= sort_max) {
      block_bitonic_sort(src + seg.begin, buffers.keys + seg.begin, size, sort_space);
      continue;  // block_bitonic_sort ended with a barrier: `top` is settled
    }
    if (threadIdx.x == 0) {
      pivot = choose_pivot(src, seg.begin, seg.end);
      cursors[0] = cursors[1] = 0;
    }
    __syncthreads();
    uint32_t* dst = destination_of(buffers, seg);
    for (unsigned t = seg.begin; t < seg.end; t += tile)
      partition_tile(src, dst, seg.begin, seg.end, t, min(t + tile, seg.end), pivot, cursors, tile_shared);
    const unsigned less = cursors[0];
    const unsigned greater = cursors[1];
    for (unsigned i = seg.begin + less + threadIdx.x; i < seg.end - greater; i += threads) buffers.keys[i] = pivot;
    if (threadIdx.x == 0) {
      const Segment left{seg.begin, seg.begin + less, !seg.in_keys};
      const Segment right{seg.end - greater, seg.end, !seg.in_keys};
      const bool left_smaller = less < greater;
      const Segment& larger = left_smaller ? right : left;
      const Segment& smaller = left_smaller ? left : right;
      if (larger.end > larger.begin) stack[top++] = larger;
      if (smaller.end > smaller.begin) stack[top++] = smaller;
    }
    __syncthreads();
  }
}

__global__ void large_partition_kernel(Buffers buffers, Segment seg, int depth);

// Starts the work for one child segment, from the device: a grid for a large one, a block
// for the rest. Fire-and-forget: siblings run side by side, and the parent does not wait.
__device__ void launch_segment(const Buffers& buffers, const Segment& seg, int depth) {
  const unsigned size = seg.end - seg.begin;
  if (size == 0) return;
  if (size <= large_min || depth >= max_large_depth) {
    block_quicksort_kernel<<<1, threads, 0, cudaStreamFireAndForget>>>(buffers, seg);
  } else {
    large_partition_kernel<<<(size + tile - 1) / tile, threads, 0, cudaStreamFireAndForget>>>(buffers, seg, depth);
  }
}

__device__ void launch_fill(uint32_t* keys, unsigned count, uint32_t value) {
  if (count == 0) return;
  const unsigned blocks = min((count + threads * 8 - 1) / (threads * 8), 4096u);
  fill_kernel<<<blocks, threads, 0, cudaStreamFireAndForget>>>(keys, count, value);
}

// One block per tile of a large segment; the last block to finish launches what comes next.
__global__ void __launch_bounds__(threads) large_partition_kernel(Buffers buffers, Segment seg, int depth) {
  __shared__ TileShared tile_shared;
  __shared__ uint32_t pivot;
  __shared__ bool last;
  SegmentState* state = &buffers.states[seg.begin / large_min];
  const uint32_t* src = source_of(buffers, seg);
  if (threadIdx.x == 0) pivot = choose_pivot(src, seg.begin, seg.end);
  __syncthreads();
  const unsigned tile_begin = seg.begin + blockIdx.x * tile;
  partition_tile(src, destination_of(buffers, seg), seg.begin, seg.end, tile_begin, min(tile_begin + tile, seg.end),
                 pivot, &state->less, tile_shared);

  // Publish this block's keys before its ticket; the block that takes the last ticket sees
  // every block's keys and the final cursors.
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) last = atomicAdd(&state->done, 1u) == gridDim.x - 1;
  __syncthreads();
  if (!last || threadIdx.x != 0) return;
  __threadfence();
  // Read and clear the slot: the next large segment that starts in it begins from zero.
  const unsigned less = atomicExch(&state->less, 0u);
  const unsigned greater = atomicExch(&state->greater, 0u);
  atomicExch(&state->done, 0u);
  launch_fill(buffers.keys + seg.begin + less, seg.end - seg.begin - less - greater, pivot);
  launch_segment(buffers, Segment{seg.begin, seg.begin + less, !seg.in_keys}, depth + 1);
  launch_segment(buffers, Segment{seg.end - greater, seg.end, !seg.in_keys}, depth + 1);
}

size_t state_count(size_t n) { return n / large_min + 1; }

size_t align_up(size_t bytes) { return (bytes + 255) / 256 * 256; }

// Every large segment launches up to three grids; the default 2048 slots for launches not yet
// started are too few for 2^26 keys, and a launch that finds no slot fails.
void reserve_device_launches() {
  static const bool reserved = [] {
    const size_t wanted = size_t(1) << 16;
    size_t current = 0;
    const bool known = cudaDeviceGetLimit(&current, cudaLimitDevRuntimePendingLaunchCount) == cudaSuccess;
    if (!known) (void)cudaGetLastError();
    if (known && current >= wanted) return true;  // never lower a limit someone else raised
    const bool ok = cudaDeviceSetLimit(cudaLimitDevRuntimePendingLaunchCount, wanted) == cudaSuccess;
    if (!ok) (void)cudaGetLastError();  // not fatal: fewer slots only risk failed launches at 2^26
    return ok;
  }();
  (void)reserved;
}

}  // namespace

// The scratch copy of the keys, then one SegmentState per large_min keys.
extern "C" size_t quicksort_temp_bytes(size_t n) {
  return align_up(n * sizeof(uint32_t)) + align_up(state_count(n) * sizeof(SegmentState));
}

extern "C" void quicksort(uint32_t* d_keys, size_t n, void* d_temp, size_t temp_bytes, cudaStream_t stream) {
  (void)temp_bytes;
  if (n <= 1) return;
  reserve_device_launches();
  char* temp = static_cast<char*>(d_temp);
  const Buffers buffers{d_keys, reinterpret_cast<uint32_t*>(temp),
                        reinterpret_cast<SegmentState*>(temp + align_up(n * sizeof(uint32_t)))};
  const Segment whole{0, unsigned(n), 1};
  if (n <= large_min) {
    block_quicksort_kernel<<<1, threads, 0, stream>>>(buffers, whole);
    return;
  }
  cudaMemsetAsync(buffers.states, 0, state_count(n) * sizeof(SegmentState), stream);
  large_partition_kernel<<<unsigned((n + tile - 1) / tile), threads, 0, stream>>>(buffers, whole, 0);
}
