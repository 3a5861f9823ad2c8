// Lab 10 reference: a parallel three-way quicksort, its levels chained on the device with
// dynamic parallelism (CDP2).
//
// Phase 1, the large segments (more than large_min keys), one level at a time: every
// segment of a level is cut into tiles of 4096 keys, and ONE grid with a block per tile
// partitions them all. A block splits its tile into < pivot, == pivot, > pivot and claims
// room for its "<" and ">" keys with one atomicAdd each on its segment's two cursors: "<"
// keys fill the other buffer from the left, ">" keys from the right. Keys equal to the pivot
// are not moved: their run in the middle is final, and is filled with the pivot later. The
// last block to finish (a ticket counter) turns the level's segments into the next level's
// (children still larger than large_min, with their pivots and tile offsets) and launches
// that level's grid, fire-and-forget. Children of large_min keys or fewer, and the pivot
// runs, go to a work queue.
// Phase 2, the queue: a grid of resident blocks takes items one at a time. A block sorts a
// segment on its own (the same tile partition with a stack of segments, down to sort_max
// keys, which a bitonic sort in shared memory finishes), or fills a stretch of a pivot run.
//
// One grid per level, not one per segment: the GPU runs at most 128 grids at a time, and
// thousands of small ones (one per segment) would leave most SMs idle. The host launches
// phase 2 on the same stream after phase 1's first grid; a grid is complete only when all
// the grids it launched are, so phase 2 starts after the last level.
//
// Keys move between d_keys and a scratch buffer of n keys: a partition reads one and writes
// the other, so no level copies anything back; wherever a segment ends (a bitonic sort, or a
// pivot run), the last step writes into d_keys. The pivot is the median of nine keys at
// pseudo-random places of the segment, so sorted, reversed and organ-pipe inputs split as
// well as random ones, and three-way partitioning makes all-equal and few-distinct inputs
// cheap (a run of equal keys leaves the recursion at once).
#include "quicksort.h"

#include <algorithm>
#include <climits>

namespace {

constexpr int threads = 256;                  // every kernel's block
constexpr int min_blocks_per_sm = 4;          // caps registers at 64: 4 blocks per SM, not 3,
                                              // faster on the H100 (docs/design/10-quicksort.md)
constexpr int warps = threads / 32;
constexpr int rows = 16;                      // keys per thread in a partition tile
constexpr unsigned tile = threads * rows;     // 4096 keys per block and step
constexpr unsigned large_min = 1u << 13;      // larger segments are partitioned by a grid
constexpr unsigned sort_max = 2048;           // segments this short: bitonic sort in shared memory
constexpr unsigned fill_chunk = 1u << 14;     // a pivot run is filled in items of this many keys
constexpr int max_levels = 16;                // deeper large segments go to the queue (launches
                                              // nest at most 24 deep)
constexpr int stack_capacity = 64;            // a block's segment stack (log2(size / sort_max) + 2 used)
constexpr unsigned full_mask = 0xffffffffu;

// A segment [begin, end) whose keys are in d_keys (in_keys) or in the scratch buffer.
struct Segment {
  unsigned begin;
  unsigned end;
  int in_keys;
};

// A large segment of the current level: its pivot (every block of the segment picks the
// same one; the block of its first tile records it), its first tile in the level's grid,
// and the cursors its blocks claim room with.
struct LevelSegment {
  Segment seg;
  uint32_t pivot;
  unsigned first_tile;
  unsigned less;     // "<" keys placed so far
  unsigned greater;  // ">" keys placed so far
};

// An item of phase 2: sort a segment, or fill d_keys[begin, end) with `value`.
struct WorkItem {
  Segment seg;
  int fill;
  uint32_t value;
};

struct Control {
  unsigned level_segments;  // in the current level's list
  unsigned next_segments;   // written so far into the next level's list
  unsigned blocks_done;     // tickets of the current level's grid
  unsigned items;           // in the work queue
  unsigned items_taken;     // by phase 2's blocks
};

struct Buffers {
  uint32_t* keys;
  uint32_t* scratch;
  Control* control;
  LevelSegment* levels[2];  // the current level's list and the next one's, by level parity
  WorkItem* items;
  unsigned level_capacity;
  unsigned item_capacity;
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
  uint32_t pivot;
};

// Three-way partition of one tile src[tile_begin, tile_end) of segment [begin, end): "<"
// keys go to dst[begin + cursor[0] ...], ">" keys to dst[end - 1 - cursor[1] ...], each tile
// claiming its room with one atomicAdd per side (cursors in global memory for a grid, in
// shared memory for a block). Keys equal to the pivot are left out. Key r of thread t is
// tile_begin + r * threads + t, so loads and (mostly) stores are coalesced. With
// `choose_pivot_here`, thread 0 picks the segment's pivot into sh.pivot while the tile's
// loads are in flight; otherwise sh.pivot already holds it.
__device__ void partition_tile(const uint32_t* src, uint32_t* dst, unsigned begin, unsigned end, unsigned tile_begin,
                               unsigned tile_end, bool choose_pivot_here, unsigned* cursors, TileShared& sh) {
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
  if (choose_pivot_here && threadIdx.x == 0) sh.pivot = choose_pivot(src, begin, end);
  __syncthreads();
  const uint32_t pivot = sh.pivot;
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
  // Each thread takes pairs, not keys: pair p compares key i (p with a zero bit inserted at
  // position j) with key i + j, so no thread idles on the upper half of a pair.
  for (unsigned k = 2; k <= padded; k <<= 1)
    for (unsigned j = k >> 1; j > 0; j >>= 1) {
      for (unsigned p = threadIdx.x; p < padded / 2; p += threads) {
        const unsigned i = 2 * p - (p & (j - 1));
        const uint32_t a = s[i];
        const uint32_t b = s[i + j];
        if ((a > b) == ((i & k) == 0)) {
          s[i] = b;
          s[i + j] = a;
        }
      }
      __syncthreads();
    }
  for (unsigned i = threadIdx.x; i < size; i += threads) out[i] = s[i];
  __syncthreads();  // s is reused by the next segment
}

// Fills keys[begin, end) with `value`, the whole block.
__device__ void block_fill(uint32_t* keys, unsigned begin, unsigned end, uint32_t value) {
  for (unsigned i = begin + threadIdx.x; i < end; i += threads) keys[i] = value;
}

// One block sorts a whole segment: a stack of segments, the smaller child first so the stack
// stays shallow; three-way tile partitions down to sort_max keys, then a bitonic sort.
struct BlockSortShared {
  TileShared tile;
  uint32_t sort_space[sort_max];
  Segment stack[stack_capacity];
  int top;
  Segment current;
  unsigned cursors[2];
};

__device__ void block_quicksort(const Buffers& buffers, const Segment& root, BlockSortShared& sh) {
  if (threadIdx.x == 0) {
    sh.stack[0] = root;
    sh.top = 1;
  }
  __syncthreads();
  for (;;) {
    const int remaining = sh.top;
    __syncthreads();  // every thread has read `top` before thread 0 pops
    if (remaining == 0) break;
    if (threadIdx.x == 0) sh.current = sh.stack[--sh.top];
    __syncthreads();
    const Segment seg = sh.current;
    const uint32_t* src = source_of(buffers, seg);
    const unsigned size = seg.end - seg.begin;
    if (size <= sort_max) {
      if (size == 1 && seg.in_keys) continue;  // a single key already in place
      block_bitonic_sort(src + seg.begin, buffers.keys + seg.begin, size, sh.sort_space);
      continue;  // block_bitonic_sort ended with a barrier: `top` is settled
    }
    if (threadIdx.x == 0) sh.cursors[0] = sh.cursors[1] = 0;
    // partition_tile's first barrier orders this before its atomics
    uint32_t* dst = destination_of(buffers, seg);
    for (unsigned t = seg.begin; t < seg.end; t += tile)
      partition_tile(src, dst, seg.begin, seg.end, t, min(t + tile, seg.end), t == seg.begin, sh.cursors, sh.tile);
    const unsigned less = sh.cursors[0];
    const unsigned greater = sh.cursors[1];
    block_fill(buffers.keys, seg.begin + less, seg.end - greater, sh.tile.pivot);
    if (threadIdx.x == 0) {
      const Segment left{seg.begin, seg.begin + less, !seg.in_keys};
      const Segment right{seg.end - greater, seg.end, !seg.in_keys};
      const bool left_smaller = less < greater;
      const Segment& larger = left_smaller ? right : left;
      const Segment& smaller = left_smaller ? left : right;
      if (larger.end > larger.begin) sh.stack[sh.top++] = larger;
      if (smaller.end > smaller.begin) sh.stack[sh.top++] = smaller;
    }
    __syncthreads();
  }
}

// Phase 2: resident blocks take queue items until none is left.
__global__ void __launch_bounds__(threads, min_blocks_per_sm) work_queue_kernel(Buffers buffers) {
  __shared__ BlockSortShared sh;
  __shared__ unsigned taken;
  for (;;) {
    if (threadIdx.x == 0) taken = atomicAdd(&buffers.control->items_taken, 1u);
    __syncthreads();
    const unsigned index = taken;
    __syncthreads();  // `taken` is written again at the next turn
    if (index >= buffers.control->items) return;
    const WorkItem item = buffers.items[index];
    if (item.fill)
      block_fill(buffers.keys, item.seg.begin, item.seg.end, item.value);
    else
      block_quicksort(buffers, item.seg, sh);
  }
}

// Appends work items, from any thread: `count` slots taken at once.
__device__ WorkItem* claim_items(const Buffers& buffers, unsigned count) {
  const unsigned first = atomicAdd(&buffers.control->items, count);
  return buffers.items + first;
}

__device__ void queue_sort(const Buffers& buffers, const Segment& seg) {
  const unsigned size = seg.end - seg.begin;
  if (size == 0 || (size == 1 && seg.in_keys)) return;
  *claim_items(buffers, 1) = WorkItem{seg, 0, 0};
}

// The pivot run d_keys[begin, end), cut into items of fill_chunk keys.
__device__ void queue_fill(const Buffers& buffers, unsigned begin, unsigned end, uint32_t value) {
  if (end <= begin) return;
  const unsigned count = (end - begin + fill_chunk - 1) / fill_chunk;
  WorkItem* item = claim_items(buffers, count);
  for (unsigned c = 0; c < count; ++c)
    item[c] = WorkItem{{begin + c * fill_chunk, min(end, begin + (c + 1) * fill_chunk), 1}, 1, value};
}

__global__ void level_kernel(Buffers buffers, int level);

// A child of a large segment: the next level's list if it is still large (and levels are
// left), else the queue.
__device__ void place_child(const Buffers& buffers, const Segment& child, int next_level) {
  if (child.end - child.begin > large_min && next_level < max_levels) {
    const unsigned slot = atomicAdd(&buffers.control->next_segments, 1u);
    buffers.levels[next_level & 1][slot].seg = child;
  } else {
    queue_sort(buffers, child);
  }
}

__device__ __forceinline__ unsigned tiles_of(const Segment& seg) { return (seg.end - seg.begin + tile - 1) / tile; }

// The next level's segments get cleared cursors and first tiles (an exclusive scan of their
// tile counts); returns the level's total tiles. The whole block.
__device__ unsigned prepare_level(const Buffers& buffers, LevelSegment* list, unsigned count, TileShared& sh) {
  unsigned carried = 0;
  for (unsigned base = 0; base < count; base += threads) {
    const unsigned i = base + threadIdx.x;
    unsigned tiles = 0;
    if (i < count) {
      LevelSegment& s = list[i];
      s.less = s.greater = 0;
      tiles = tiles_of(s.seg);
    }
    unsigned total = 0;
    const unsigned before = block_exclusive_scan(tiles, sh.warp_sums, total);
    if (i < count) list[i].first_tile = carried + before;
    carried += total;
  }
  return carried;
}

// Starts a level's grid (fire-and-forget: it belongs to the launching grid, which is complete
// only once it is).
__device__ void launch_level(const Buffers& buffers, int level, unsigned tiles) {
  if (threadIdx.x == 0 && tiles > 0) level_kernel<<<tiles, threads, 0, cudaStreamFireAndForget>>>(buffers, level);
}

// Run by the last block of a level's grid: children, pivot runs, and the next level.
__device__ void finish_level(const Buffers& buffers, int level, TileShared& sh) {
  // Cursors and counters were changed by other blocks' atomics (in L2): read them past L1,
  // where this SM's blocks may have left stale copies of their lines.
  Control* control = buffers.control;
  const LevelSegment* list = buffers.levels[level & 1];
  const unsigned count = __ldcg(&control->level_segments);
  for (unsigned i = threadIdx.x; i < count; i += threads) {
    const Segment seg = list[i].seg;
    const uint32_t pivot = __ldcg(&list[i].pivot);
    const unsigned less = __ldcg(&list[i].less);
    const unsigned greater = __ldcg(&list[i].greater);
    queue_fill(buffers, seg.begin + less, seg.end - greater, pivot);
    place_child(buffers, Segment{seg.begin, seg.begin + less, !seg.in_keys}, level + 1);
    place_child(buffers, Segment{seg.end - greater, seg.end, !seg.in_keys}, level + 1);
  }
  __threadfence();
  __syncthreads();
  const unsigned next = __ldcg(&control->next_segments);
  const unsigned tiles = prepare_level(buffers, buffers.levels[(level + 1) & 1], next, sh);
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) {
    control->level_segments = next;
    control->next_segments = 0;
    control->blocks_done = 0;
    __threadfence();
  }
  launch_level(buffers, level + 1, tiles);
}

// The segment whose tiles include `block`: the last one whose first tile is not past it.
__device__ unsigned find_segment(const LevelSegment* list, unsigned count, unsigned block) {
  unsigned low = 0, high = count;  // the answer is in [low, high)
  while (high - low > 1) {
    const unsigned middle = (low + high) / 2;
    if (list[middle].first_tile <= block) low = middle; else high = middle;
  }
  return low;
}

// One block per tile of every large segment of `level`.
__global__ void __launch_bounds__(threads, min_blocks_per_sm) level_kernel(Buffers buffers, int level) {
  __shared__ TileShared tile_shared;
  __shared__ unsigned found;
  __shared__ bool last;
  LevelSegment* list = buffers.levels[level & 1];
  if (threadIdx.x == 0) found = find_segment(list, buffers.control->level_segments, blockIdx.x);
  __syncthreads();
  LevelSegment* s = &list[found];
  const Segment seg = s->seg;
  const unsigned tile_begin = seg.begin + (blockIdx.x - s->first_tile) * tile;
  partition_tile(source_of(buffers, seg), destination_of(buffers, seg), seg.begin, seg.end, tile_begin,
                 min(tile_begin + tile, seg.end), true, &s->less, tile_shared);
  if (threadIdx.x == 0 && blockIdx.x == s->first_tile) s->pivot = tile_shared.pivot;

  // Publish this block's keys and cursors before its ticket; the block that takes the last
  // ticket sees every block's.
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) last = atomicAdd(&buffers.control->blocks_done, 1u) == gridDim.x - 1;
  __syncthreads();
  if (!last) return;
  __threadfence();
  finish_level(buffers, level, tile_shared);
}

// Phase 1's start, one block: the whole array is level 0's only segment, or a queue item.
__global__ void __launch_bounds__(threads) start_kernel(Buffers buffers, unsigned n) {
  __shared__ TileShared sh;
  Control* control = buffers.control;
  if (threadIdx.x == 0) *control = Control{};
  const Segment whole{0, n, 1};
  __syncthreads();
  if (n <= large_min) {
    if (threadIdx.x == 0) queue_sort(buffers, whole);
    return;
  }
  if (threadIdx.x == 0) {
    buffers.levels[0][0].seg = whole;
    control->level_segments = 1;
  }
  __syncthreads();
  const unsigned tiles = prepare_level(buffers, buffers.levels[0], 1, sh);
  __threadfence();
  launch_level(buffers, 0, tiles);
}

size_t align_up(size_t bytes) { return (bytes + 255) / 256 * 256; }

// Large segments of one level are disjoint and longer than large_min.
size_t level_capacity(size_t n) { return n / large_min + 1; }

// Each level adds at most two sort items per segment, and fill items of at most
// (its pivot runs' keys / fill_chunk + one per segment).
size_t item_capacity(size_t n) {
  return size_t(max_levels) * (3 * level_capacity(n) + n / fill_chunk) + 1;
}

struct Layout {
  size_t scratch, control, levels, items, total;
};

Layout layout(size_t n) {
  Layout l{};
  l.scratch = 0;
  l.control = align_up(n * sizeof(uint32_t));
  l.levels = l.control + align_up(sizeof(Control));
  l.items = l.levels + 2 * align_up(level_capacity(n) * sizeof(LevelSegment));
  l.total = l.items + align_up(item_capacity(n) * sizeof(WorkItem));
  return l;
}

// Phase 2's grid: as many blocks as fit on the GPU at once (they loop over the queue).
unsigned resident_blocks() {
  static const unsigned blocks = [] {
    int device = 0, sms = 0, per_sm = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, work_queue_kernel, threads, 0);
    return unsigned(std::max(1, sms * std::max(1, per_sm)));
  }();
  return blocks;
}

}  // namespace

extern "C" size_t quicksort_temp_bytes(size_t n) { return layout(n).total; }

extern "C" void quicksort(uint32_t* d_keys, size_t n, void* d_temp, size_t temp_bytes, cudaStream_t stream) {
  (void)temp_bytes;
  if (n <= 1) return;
  char* temp = static_cast<char*>(d_temp);
  const Layout l = layout(n);
  const size_t level_bytes = align_up(level_capacity(n) * sizeof(LevelSegment));
  const Buffers buffers{d_keys,
                        reinterpret_cast<uint32_t*>(temp + l.scratch),
                        reinterpret_cast<Control*>(temp + l.control),
                        {reinterpret_cast<LevelSegment*>(temp + l.levels),
                         reinterpret_cast<LevelSegment*>(temp + l.levels + level_bytes)},
                        reinterpret_cast<WorkItem*>(temp + l.items),
                        unsigned(level_capacity(n)),
                        unsigned(item_capacity(n))};
  start_kernel<<<1, threads, 0, stream>>>(buffers, unsigned(n));
  work_queue_kernel<<<resident_blocks(), threads, 0, stream>>>(buffers);
}
