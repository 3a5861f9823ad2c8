// Lab 03 starter: the chapter's top-k, built on its max-reduction framework.
//
// Pass 1: one thread per input element (the grid covers n), each thread keeping its own
// sorted array of the k largest values it has seen; the block then merges those arrays in
// a shared-memory tree, as the max reduction merged single values, and writes its k best.
// Pass 2: the same kernel, as a single block, over the k values of every block.
//
// It compiles and answers for small k, but it is wrong on some inputs (read insert_value
// closely) and cannot take k above 48. It is also slow: the README explains why, and what
// to do instead.
#include "topk.h"

#include <climits>
#include <cstdio>

namespace {

constexpr int threads_per_block = 256;
// The block's merge area holds threads_per_block * k ints in static shared memory, which a
// block may have at most 48 KiB of: 256 * 48 * 4 bytes is exactly that.
constexpr int max_k = 48;
static_assert(threads_per_block * max_k * sizeof(int32_t) <= 48 * 1024,
              "the merge area must fit the 48 KiB of static shared memory a block may have");

// Inserts `value` into held[0..k), kept sorted largest first, if it is among the k largest.
__device__ void insert_value(int32_t* held, int k, int32_t value) {
  for (int i = 0; i < k; ++i)
    if (held[i] == value) return;
  if (value < held[k - 1]) return;
  for (int i = k - 2; i >= 0; --i) {
    if (value > held[i]) {
      held[i + 1] = held[i];
    } else {
      held[i + 1] = value;
      return;
    }
  }
  held[0] = value;
}

__global__ void topk_per_block_kernel(const int32_t* in, size_t count, int k, int32_t* block_results) {
  __shared__ int32_t block_topk[threads_per_block * max_k];
  int32_t held[max_k];
  for (int i = 0; i < k; ++i) held[i] = INT_MIN;

  for (size_t i = threadIdx.x + size_t(blockIdx.x) * blockDim.x; i < count; i += size_t(gridDim.x) * blockDim.x)
    insert_value(held, k, in[i]);
  for (int i = 0; i < k; ++i) block_topk[threadIdx.x * k + i] = held[i];
  __syncthreads();

  // Tree merge: at each step the lower half of the threads absorbs the upper half's arrays.
  for (int length = threads_per_block / 2; length >= 1; length /= 2) {
    if (threadIdx.x < length)
      for (int i = 0; i < k; ++i) insert_value(held, k, block_topk[(threadIdx.x + length) * k + i]);
    __syncthreads();  // everyone has read the upper half before anyone overwrites the lower
    if (threadIdx.x < length)
      for (int i = 0; i < k; ++i) block_topk[threadIdx.x * k + i] = held[i];
    __syncthreads();  // the lower half is written before the next step reads it
  }
  if (threadIdx.x < k) block_results[size_t(blockIdx.x) * k + threadIdx.x] = block_topk[threadIdx.x];
}

}  // namespace

extern "C" void topk(const int32_t* d_in, size_t n, int k, int32_t* d_out, cudaStream_t stream) {
  if (k < 1 || size_t(k) > n) {
    std::fprintf(stderr, "topk: k = %d is outside 1..n (n = %zu); d_out was not written\n", k, n);
    return;
  }
  if (k > max_k) {
    std::fprintf(stderr,
                 "topk (starter): k = %d is more than %d, the most that %d threads x k ints of "
                 "static shared memory (48 KiB per block) allow; d_out was not written\n",
                 k, max_k, threads_per_block);
    return;
  }
  const size_t blocks = (n + threads_per_block - 1) / threads_per_block;  // one element per thread
  int32_t* block_results = nullptr;
  cudaMallocAsync(&block_results, blocks * k * sizeof(int32_t), stream);
  topk_per_block_kernel<<<unsigned(blocks), threads_per_block, 0, stream>>>(d_in, n, k, block_results);
  topk_per_block_kernel<<<1, threads_per_block, 0, stream>>>(block_results, blocks * k, k, d_out);
  cudaFreeAsync(block_results, stream);
}
