// Calibration submission for the grading policy: lab 02 "the chapter's technique done right".
//
// Starter's flaws (the chapter's dotKernel with ATOMIC 0):
//   1. blocks combined their sums with a plain `*result += block_sum`: a race, wrong and
//      different on every run;
//   2. threads past n returned before __syncthreads(), so thread 0 summed shared slots that
//      were never written (and the barrier was not reached by every thread);
//   3. argmax did atomicMax on the value, then stored the index in a second, separate step.
// Changes, and only these:
//   1. combine_blocks_with_atomic_add = true: the chapter's ATOMIC 1, atomicAdd of the block
//      sum (through unsigned long long, as the README's atomics table explains);
//   2. no early return: a thread past n parks a product of 0 and still reaches the barrier;
//   3. argmax packs each candidate into one 64-bit word that orders candidates as the contract
//      does (value with its sign bit flipped in the high half, so unsigned order is signed
//      order; the bitwise complement of the index in the low half, so a smaller index wins a
//      tie) and uses a single atomicMax on it; a one-thread kernel unpacks the index.
// Kept: one element per thread, blocks of 32 threads, thread 0 summing its block's 32 products
// one by one, one global atomic per block; argmax's one element per thread, one atomic each.
// Follows seed 001_183bd34e31da23f8.txt (the atomic functions table; dotKernel with
// `#define ATOMIC 1`), and the lab README, "Why += loses updates", "The second flaw: threads
// past n" and "The atomic functions".
#include "dot.h"

namespace {

// The chapter's switch. false: each block adds its sum with a plain read-modify-write,
// as the chapter's first version did. true: the chapter's repair, atomicAdd.
constexpr bool combine_blocks_with_atomic_add = true;

constexpr int threads_per_block = 32;

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
