// Lab 02 starter: the chapter's dot product, and a first try at arg-max.
//
// dot: one element per thread in blocks of 32 threads; each thread parks its product in
// shared memory, thread 0 adds the block's 32 products one by one, and the block's sum
// is added to *d_result. The README walks through what is wrong here (there is more than
// one thing) and then why, once right, it is slow.
//
// argmax: looks plausible, and is wrong. The README's table of atomic functions is the
// place to start.
#include "dot.h"

namespace {

// The chapter's switch. false: each block adds its sum with a plain read-modify-write,
// as the chapter's first version did. true: the chapter's repair, atomicAdd. Try both.
constexpr bool combine_blocks_with_atomic_add = false;

constexpr int threads_per_block = 32;

__global__ void dot_chapter_kernel(const int32_t* a, const int32_t* b, size_t n, int64_t* result) {
  __shared__ int64_t products[threads_per_block];
  const size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (i >= n) return;  // nothing to multiply past the end
  products[threadIdx.x] = int64_t(a[i]) * b[i];
  __syncthreads();

  if (threadIdx.x == 0) {
    int64_t block_sum = 0;
    for (int t = 0; t < threads_per_block; ++t) block_sum += products[t];
    if (combine_blocks_with_atomic_add)
      atomicAdd(reinterpret_cast<unsigned long long*>(result), static_cast<unsigned long long>(block_sum));
    else
      *result += block_sum;
  }
}

constexpr int argmax_threads_per_block = 256;

// Keeps the best value so far in best_value (atomicMax) and, when this thread's value is
// the best, records its index next to it.
__global__ void argmax_kernel(const int32_t* in, size_t n, int32_t* best_value, int64_t* best_index) {
  const size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const int32_t value = in[i];
  atomicMax(best_value, value);
  if (*best_value == value) *best_index = int64_t(i);
}

__global__ void set_to_lowest_kernel(int32_t* value) { *value = INT32_MIN; }

}  // namespace

extern "C" void dot(const int32_t* d_a, const int32_t* d_b, size_t n, int64_t* d_result, cudaStream_t stream) {
  cudaMemsetAsync(d_result, 0, sizeof(int64_t), stream);
  if (n == 0) return;
  const size_t blocks = (n + threads_per_block - 1) / threads_per_block;
  dot_chapter_kernel<<<blocks, threads_per_block, 0, stream>>>(d_a, d_b, n, d_result);
}

extern "C" void argmax(const int32_t* d_in, size_t n, int64_t* d_index, cudaStream_t stream) {
  static int32_t* best_value = nullptr;  // scratch for the running maximum
  if (best_value == nullptr) cudaMalloc(&best_value, sizeof(int32_t));
  set_to_lowest_kernel<<<1, 1, 0, stream>>>(best_value);
  cudaMemsetAsync(d_index, 0, sizeof(int64_t), stream);
  const size_t blocks = (n + argmax_threads_per_block - 1) / argmax_threads_per_block;
  argmax_kernel<<<blocks, argmax_threads_per_block, 0, stream>>>(d_in, n, best_value, d_index);
}
