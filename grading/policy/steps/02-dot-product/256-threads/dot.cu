// Policy step for lab 02: the chapter's kernel with both flaws fixed, at 256 threads per block.
//
// The same file as the chapter tier (grading/policy/chapter/02-dot-product/dot.cu): the
// chapter's ATOMIC 1 (one atomicAdd of each block's sum), no early return before the barrier
// (threads past n park a product of 0), argmax with one atomicMax on a packed 64-bit word.
// One change: 256 threads per block instead of the chapter's 32, so thread 0 of each block sums
// 256 products one by one and there is one global atomic per 256 elements instead of per 32.
//
// Why it is a tier: the block size is a knob of the chapter's own technique, not a technique
// of its own. With 8 times fewer blocks and global atomics it runs faster, but it keeps what
// the chapter's design costs (a serial sum by one thread while the others idle, a block
// launched per 256 elements, every atomic on one address), so it must earn what the chapter's
// technique earns (the policy's 70-85), not what the README's hints (a grid-stride loop,
// warp shuffles, wide loads) earn.
// Follows seed 001_183bd34e31da23f8.txt (dotKernel with `#define ATOMIC 1`); lab README,
// "Correct, and slow".
#include "dot.h"

namespace {

// The chapter's switch. false: each block adds its sum with a plain read-modify-write,
// as the chapter's first version did. true: the chapter's repair, atomicAdd.
constexpr bool combine_blocks_with_atomic_add = true;

constexpr int threads_per_block = 256;  // the chapter has 32

__global__ void dot_chapter_kernel(const int32_t* a, const int32_t* b, size_t n, int64_t* result) {
  __shared__ int64_t products[threads_per_block];
  const size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  // Past the end: contribute 0, and stay for the barrier.
  products[threadIdx.x] = i < n ? int64_t(a[i]) * b[i] : 0;
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

// One 64-bit word per candidate, larger for a better candidate: the value with its sign bit
// flipped (unsigned order = signed order) above the complement of the index (n < 2^32, so a
// smaller index gives a larger low half). Every real candidate is above 0, the initial value.
__device__ unsigned long long argmax_key(int32_t value, size_t index) {
  const unsigned long long ordered_value = uint32_t(value) ^ 0x80000000u;
  const unsigned long long inverted_index = 0xFFFFFFFFu - uint32_t(index);
  return (ordered_value << 32) | inverted_index;
}

__global__ void argmax_kernel(const int32_t* in, size_t n, unsigned long long* best_key) {
  const size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (i >= n) return;  // no barrier in this kernel: leaving early is safe
  atomicMax(best_key, argmax_key(in[i], i));
}

__global__ void argmax_unpack_kernel(const unsigned long long* best_key, int64_t* best_index) {
  *best_index = int64_t(0xFFFFFFFFu - uint32_t(*best_key & 0xFFFFFFFFu));
}

}  // namespace

extern "C" void dot(const int32_t* d_a, const int32_t* d_b, size_t n, int64_t* d_result, cudaStream_t stream) {
  cudaMemsetAsync(d_result, 0, sizeof(int64_t), stream);
  if (n == 0) return;
  const size_t blocks = (n + threads_per_block - 1) / threads_per_block;
  dot_chapter_kernel<<<blocks, threads_per_block, 0, stream>>>(d_a, d_b, n, d_result);
}

extern "C" void argmax(const int32_t* d_in, size_t n, int64_t* d_index, cudaStream_t stream) {
  static unsigned long long* best_key = nullptr;  // scratch for the running best candidate
  if (best_key == nullptr) cudaMalloc(&best_key, sizeof(unsigned long long));
  cudaMemsetAsync(best_key, 0, sizeof(unsigned long long), stream);
  const size_t blocks = (n + argmax_threads_per_block - 1) / argmax_threads_per_block;
  argmax_kernel<<<blocks, argmax_threads_per_block, 0, stream>>>(d_in, n, best_key);
  argmax_unpack_kernel<<<1, 1, 0, stream>>>(best_key, d_index);
}
