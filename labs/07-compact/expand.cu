// Lab 07 part 2 starter: the chapter's split, which puts packed values back where they came
// from, written out for the contract's expand_positive.
//
//   1. predicate: flag[i] = 1 if in[i] > 0, else 0
//   2. scan:      the inclusive scan of the flags, as in compact.cu: for kept element i, its
//                 place in the packed array plus one
//   3. clear:     d_out is set to zero, since the scatter writes only the kept places
//   4. scatter:   kept element i reads its value back from packed[scan[i] - 1]
//
// The chapter runs its split on the addresses its pack has just scanned, after copying the
// packed output back into its input buffer. A call of expand_positive is on its own, so it
// scans again; and the packed values arrive in a buffer of their own, so the copy is gone.
//
// It keeps compact.cu's two limits: the scan is the chapter's one block, so only the first
// 2048 elements get their values back, and the flags and their scan are floats, exact only
// below 2^24. The README shows how to fix both, and then how to do the whole thing in one
// pass that reads d_in and d_packed once and writes d_out once.
#include "compact.h"

namespace {

constexpr int BLOCK_DIM = 1024;
constexpr int block_items = 2 * BLOCK_DIM;  // the chapter's scan: two elements per thread

__global__ void predicate_kernel(const float* in, size_t n, float* flags) {
  const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) flags[i] = in[i] > 0.f ? 1.f : 0.f;
}

// The chapter's Blelloch scan of one block of up to 2048 elements (inclusive), in place when
// in == out.
__global__ void scan_block_kernel(const float* in, size_t n, float* out) {
  __shared__ float s_buffer[block_items];
  const int tid = threadIdx.x;
  const size_t base = size_t(blockIdx.x) * block_items;
  const size_t first = base + tid, second = base + tid + BLOCK_DIM;
  s_buffer[tid] = first < n ? in[first] : 0.f;
  s_buffer[tid + BLOCK_DIM] = second < n ? in[second] : 0.f;

  int offset = 1;
  for (; offset < block_items; offset <<= 1) {  // up-sweep: partial sums in a tree
    __syncthreads();
    const int idx_a = offset * (2 * tid + 1) - 1, idx_b = offset * (2 * tid + 2) - 1;
    if (idx_b < block_items) s_buffer[idx_b] += s_buffer[idx_a];
  }
  for (offset >>= 1; offset > 0; offset >>= 1) {  // down-sweep: carry them to every element
    __syncthreads();
    const int idx_a = offset * (2 * tid + 2) - 1, idx_b = offset * (2 * tid + 3) - 1;
    if (idx_b < block_items) s_buffer[idx_b] += s_buffer[idx_a];
  }
  __syncthreads();
  if (first < n) out[first] = s_buffer[tid];
  if (second < n) out[second] = s_buffer[tid + BLOCK_DIM];
}

// The chapter's scan covers one block: n is cut to 2048 elements before anything runs.
size_t chapter_limit(size_t n) { return n < size_t(block_items) ? n : size_t(block_items); }

// The chapter's split: the same address as the pack's, read instead of written. Kept element
// i takes packed[scan[i] - 1]; the others keep the zero that the clear left.
__global__ void expand_scatter_kernel(const float* in, size_t n, const float* scan, const float* packed,
                                      float* out) {
  const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  if (in[i] > 0.f) out[i] = packed[size_t(scan[i]) - 1];
}

constexpr int threads = 256;
unsigned grid_for(size_t n) { return unsigned((n + threads - 1) / threads); }

}  // namespace

extern "C" void expand_positive(const float* d_in, const float* d_packed, size_t n, float* d_out,
                                cudaStream_t stream) {
  if (n == 0) return;
  cudaMemsetAsync(d_out, 0, n * sizeof(float), stream);  // all of d_out, as the chapter clears it
  n = chapter_limit(n);
  float* scan = nullptr;
  if (cudaMallocAsync(&scan, n * sizeof(float), stream) != cudaSuccess) return;  // the error stays visible
  predicate_kernel<<<grid_for(n), threads, 0, stream>>>(d_in, n, scan);
  scan_block_kernel<<<1, BLOCK_DIM, 0, stream>>>(scan, n, scan);
  expand_scatter_kernel<<<grid_for(n), threads, 0, stream>>>(d_in, n, scan, d_packed, d_out);
  cudaFreeAsync(scan, stream);
}
