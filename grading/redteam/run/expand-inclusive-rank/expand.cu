// Red-team submission, lab 07 part 2: the chapter's expansion (grading/policy/chapter/) with
// one mistake: each kept element reads packed[scan[i]], the inclusive scan, where its rank is
// scan[i] - 1. Every kept element takes its successor's value, and the last one reads past
// d_packed + count.
#include "compact.h"

namespace {

constexpr int BLOCK_DIM = 1024;
constexpr int block_items = 2 * BLOCK_DIM;  // the chapter's scan: two elements per thread
constexpr int log_num_banks = 5;            // 32 shared-memory banks

__global__ void predicate_kernel(const float* in, size_t n, uint32_t* flags) {
  const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) flags[i] = in[i] > 0.f ? 1u : 0u;
}

// GPU Gems 3, 39.2.3: one padding word after every 32.
__device__ __forceinline__ int conflict_free(int i) { return i + (i >> log_num_banks); }

// The chapter's Blelloch scan of one block of 2048 elements (inclusive), in place when
// in == out; with block_sums, the block's total goes to block_sums[blockIdx.x].
__global__ void scan_block_kernel(const uint32_t* in, size_t n, uint32_t* out, uint32_t* block_sums) {
  __shared__ uint32_t s_buffer[block_items + (block_items >> log_num_banks)];
  const int tid = threadIdx.x;
  const size_t base = size_t(blockIdx.x) * block_items;
  const size_t first = base + tid, second = base + tid + BLOCK_DIM;
  s_buffer[conflict_free(tid)] = first < n ? in[first] : 0u;
  s_buffer[conflict_free(tid + BLOCK_DIM)] = second < n ? in[second] : 0u;

  int offset = 1;
  for (; offset < block_items; offset <<= 1) {  // up-sweep: partial sums in a tree
    __syncthreads();
    const int idx_a = offset * (2 * tid + 1) - 1, idx_b = offset * (2 * tid + 2) - 1;
    if (idx_b < block_items) s_buffer[conflict_free(idx_b)] += s_buffer[conflict_free(idx_a)];
  }
  for (offset >>= 1; offset > 0; offset >>= 1) {  // down-sweep: carry them to every element
    __syncthreads();
    const int idx_a = offset * (2 * tid + 2) - 1, idx_b = offset * (2 * tid + 3) - 1;
    if (idx_b < block_items) s_buffer[conflict_free(idx_b)] += s_buffer[conflict_free(idx_a)];
  }
  __syncthreads();
  if (first < n) out[first] = s_buffer[conflict_free(tid)];
  if (second < n) out[second] = s_buffer[conflict_free(tid + BLOCK_DIM)];
  if (block_sums != nullptr && tid == 0) block_sums[blockIdx.x] = s_buffer[conflict_free(block_items - 1)];
}

// Block b + 1 adds the scanned total of blocks 0..b to each of its elements.
__global__ void add_block_offsets_kernel(uint32_t* out, size_t n, const uint32_t* scanned_block_sums) {
  const size_t block = size_t(blockIdx.x) + 1;
  const uint32_t offset = scanned_block_sums[block - 1];
  const size_t end = min(n, (block + 1) * block_items);
  for (size_t i = block * block_items + threadIdx.x; i < end; i += BLOCK_DIM) out[i] += offset;
}

size_t scan_blocks(size_t n) { return (n + block_items - 1) / block_items; }

// The chapter's global scan: scan each block and keep its total, scan the totals
// (recursively), add them back.
void global_scan(const uint32_t* in, size_t n, uint32_t* out, uint32_t* block_sums, cudaStream_t stream) {
  const size_t blocks = scan_blocks(n);
  scan_block_kernel<<<unsigned(blocks), BLOCK_DIM, 0, stream>>>(in, n, out, blocks > 1 ? block_sums : nullptr);
  if (blocks == 1) return;
  global_scan(block_sums, blocks, block_sums, block_sums + blocks, stream);
  add_block_offsets_kernel<<<unsigned(blocks - 1), BLOCK_DIM, 0, stream>>>(out, n, block_sums);
}

size_t block_sum_words(size_t n) {
  size_t words = 0;
  for (size_t level = scan_blocks(n); level > 1; level = scan_blocks(level)) words += level;
  return words + 1;
}

// The chapter's split, but kept element i reads packed[scan[i]]: the inclusive scan taken
// for the rank.
__global__ void expand_scatter_kernel(const float* in, size_t n, const uint32_t* scan, const float* packed,
                                      float* out) {
  const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  if (in[i] > 0.f) out[i] = packed[scan[i]];
}

constexpr int threads = 256;
unsigned grid_for(size_t n) { return unsigned((n + threads - 1) / threads); }

// Steps 1 and 2, into a scratch buffer the caller frees: n scanned flags, then the block sums.
uint32_t* flags_scanned(const float* d_in, size_t n, cudaStream_t stream) {
  uint32_t* scratch = nullptr;
  if (cudaMallocAsync(&scratch, (n + block_sum_words(n)) * sizeof(uint32_t), stream) != cudaSuccess) return nullptr;
  predicate_kernel<<<grid_for(n), threads, 0, stream>>>(d_in, n, scratch);
  global_scan(scratch, n, scratch, scratch + n, stream);
  return scratch;
}

}  // namespace

extern "C" void expand_positive(const float* d_in, const float* d_packed, size_t n, float* d_out,
                                cudaStream_t stream) {
  if (n == 0) return;
  uint32_t* scan = flags_scanned(d_in, n, stream);
  if (scan == nullptr) return;  // the CUDA error stays visible to the caller
  cudaMemsetAsync(d_out, 0, n * sizeof(float), stream);
  expand_scatter_kernel<<<grid_for(n), threads, 0, stream>>>(d_in, n, scan, d_packed, d_out);
  cudaFreeAsync(scan, stream);
}
