// A plain, correct lab 02 (not the reference): this entry is about lab 01's compile error
// leaving lab 02's build and grade alone, so lab 02 only has to be right.
#include "dot.h"

namespace {

constexpr int threads = 256;

__device__ unsigned long long warp_sum(unsigned long long x) {
  for (int offset = 16; offset > 0; offset /= 2) x += __shfl_down_sync(0xffffffffu, x, offset);
  return x;
}

// Sums wrap modulo 2^64 as unsigned integers, which is what the contract asks of int64.
__global__ void dot_kernel(const int32_t* a, const int32_t* b, size_t n, unsigned long long* result) {
  unsigned long long sum = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    sum += (unsigned long long)(int64_t(a[i]) * b[i]);
  sum = warp_sum(sum);
  if (threadIdx.x % 32 == 0) atomicAdd(result, sum);
}

// The largest value wins, then the smallest index: both in one 64-bit key for atomicMax.
__device__ unsigned long long argmax_key(int32_t value, size_t index) {
  return (unsigned long long)(uint32_t(value) ^ 0x80000000u) << 32 | (0xffffffffu - uint32_t(index));
}

__global__ void argmax_kernel(const int32_t* in, size_t n, unsigned long long* best) {
  unsigned long long key = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    key = max(key, argmax_key(in[i], i));
  atomicMax(best, key);
}

__global__ void index_of_key_kernel(int64_t* index) {
  *index = int64_t(0xffffffffu - uint32_t(*reinterpret_cast<unsigned long long*>(index)));
}

unsigned blocks_for(size_t n) { return unsigned(n / threads + 1 < 1024 ? n / threads + 1 : 1024); }

}  // namespace

extern "C" void dot(const int32_t* d_a, const int32_t* d_b, size_t n, int64_t* d_result, cudaStream_t stream) {
  cudaMemsetAsync(d_result, 0, sizeof(int64_t), stream);
  dot_kernel<<<blocks_for(n), threads, 0, stream>>>(d_a, d_b, n, reinterpret_cast<unsigned long long*>(d_result));
}

extern "C" void argmax(const int32_t* d_in, size_t n, int64_t* d_index, cudaStream_t stream) {
  cudaMemsetAsync(d_index, 0, sizeof(int64_t), stream);
  argmax_kernel<<<blocks_for(n), threads, 0, stream>>>(d_in, n, reinterpret_cast<unsigned long long*>(d_index));
  index_of_key_kernel<<<1, 1, 0, stream>>>(d_index);
}
