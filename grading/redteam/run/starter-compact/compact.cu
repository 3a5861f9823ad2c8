// Lab 07 starter: the chapter's stream compaction, predicate -> scan -> pack, written out
// for any n.
//
//   1. predicate: flag[i] = 1 if in[i] > 0, else 0
//   2. scan:      the inclusive scan of the flags gives, for every kept element, its place
//                 in the output plus one (the chapter's scan: one block of 2048 elements)
//   3. pack:      every kept element goes to out[scan[i] - 1]; the last scan value is the
//                 count. The split puts each other element after all the kept ones.
//
// It has the chapter's two limits. Its scan is one block, so only the first 2048 elements
// are looked at: lab 06 showed how to scan any n. And the flags and their scan are floats,
// which is right while every address is below 2^24 = 16777216 and silently wrong above: a
// float has 24 significant bits, so 16777217 rounds to 16777216 and two elements land on one
// slot while another slot stays empty. The README shows how to fix both, and then how to do
// the whole thing in one pass.
#include "compact.h"

namespace {

constexpr int BLOCK_DIM = 1024;
constexpr int block_items = 2 * BLOCK_DIM;  // the chapter's scan: two elements per thread

__global__ void predicate_kernel(const float* in, size_t n, float* flags) {
  const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) flags[i] = in[i] > 0.f ? 1.f : 0.f;
}

// The chapter's Blelloch scan of one block of up to 2048 elements (inclusive), in place
// when in == out.
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

// Pack: kept element i goes to out[scan[i] - 1]; the last thread writes the count.
__global__ void compact_scatter_kernel(const float* in, size_t n, const float* scan, float* out, size_t* count) {
  const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  if (in[i] > 0.f) out[size_t(scan[i]) - 1] = in[i];
  if (i == n - 1) *count = size_t(scan[i]);
}

// Split: the kept elements as above; element i of the others goes after all the kept ones,
// at total + (the number of others before i) = total + i - scan[i].
__global__ void split_scatter_kernel(const float* in, size_t n, const float* scan, float* out) {
  const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float total = scan[n - 1];
  if (in[i] > 0.f)
    out[size_t(scan[i]) - 1] = in[i];
  else
    out[size_t(total + (float(i) - scan[i]))] = in[i];
}

constexpr int threads = 256;
unsigned grid_for(size_t n) { return unsigned((n + threads - 1) / threads); }

// Steps 1 and 2, into a scratch buffer the caller frees.
float* flags_scanned(const float* d_in, size_t n, cudaStream_t stream) {
  float* scratch = nullptr;
  if (cudaMallocAsync(&scratch, n * sizeof(float), stream) != cudaSuccess) return nullptr;
  predicate_kernel<<<grid_for(n), threads, 0, stream>>>(d_in, n, scratch);
  scan_block_kernel<<<1, BLOCK_DIM, 0, stream>>>(scratch, n, scratch);
  return scratch;
}

}  // namespace

extern "C" void compact_positive(const float* d_in, size_t n, float* d_out, size_t* d_count, cudaStream_t stream) {
  if (n == 0) {
    cudaMemsetAsync(d_count, 0, sizeof(size_t), stream);
    return;
  }
  n = chapter_limit(n);
  float* scan = flags_scanned(d_in, n, stream);
  if (scan == nullptr) return;  // the CUDA error stays visible to the caller
  compact_scatter_kernel<<<grid_for(n), threads, 0, stream>>>(d_in, n, scan, d_out, d_count);
  cudaFreeAsync(scan, stream);
}

extern "C" void split_positive(const float* d_in, size_t n, float* d_out, cudaStream_t stream) {
  if (n == 0) return;
  n = chapter_limit(n);
  float* scan = flags_scanned(d_in, n, stream);
  if (scan == nullptr) return;
  split_scatter_kernel<<<grid_for(n), threads, 0, stream>>>(d_in, n, scan, d_out);
  cudaFreeAsync(scan, stream);
}
