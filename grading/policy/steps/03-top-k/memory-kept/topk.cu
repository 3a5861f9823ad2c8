// Policy step for lab 03: the chapter's technique, its temporary memory kept between calls.
//
// The chapter tier's file (grading/policy/chapter/03-top-k/topk.cu: the chapter's kernel with
// insert_value keeping equal values, up to k = 48; a full cub::DeviceRadixSort past that, the
// chapter's own advice), with one change: the per-block results, the sorted copy and CUB's
// temporary storage come from one buffer allocated on the first call and kept, grown when a
// call needs more, instead of cudaMallocAsync / cudaFreeAsync in every call. The pool behind
// cudaMallocAsync gives its memory back at every synchronisation, and the grader synchronises
// after every call, so each call paid for fresh memory from the system: the README tells
// students to keep a buffer, and this is the chapter's technique done that way.
//
// Why it is a tier: it measures the chapter's technique rather than the allocator, so it must
// earn what the chapter's technique earns (the policy's 70-85).
#include "topk.h"

#include <cub/device/device_radix_sort.cuh>

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
// Equal values are kept side by side: a value equal to held[k - 1] replaces it, which leaves
// the same multiset of k largest values.
__device__ void insert_value(int32_t* held, int k, int32_t value) {
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

// The scratch kept between calls, grown when a call needs more; cudaFree waits for the calls
// still using the old one. Calls must not overlap (the grader never runs two at once).
void* kept_scratch(size_t bytes) {
  static void* buffer = nullptr;
  static size_t capacity = 0;
  if (bytes <= capacity) return buffer;
  if (buffer != nullptr) cudaFree(buffer);
  buffer = nullptr;
  capacity = 0;
  if (cudaMalloc(&buffer, bytes) != cudaSuccess) return nullptr;
  capacity = bytes;
  return buffer;
}

size_t round_up_256(size_t bytes) { return (bytes + 255) / 256 * 256; }

// Past the chapter's k: sort everything, largest first, and keep the first k.
void topk_by_full_sort(const int32_t* d_in, size_t n, int k, int32_t* d_out, cudaStream_t stream) {
  size_t temp_bytes = 0;
  cub::DeviceRadixSort::SortKeysDescending(nullptr, temp_bytes, d_in, static_cast<int32_t*>(nullptr), int64_t(n), 0,
                                           32, stream);
  const size_t sorted_bytes = round_up_256(n * sizeof(int32_t));
  char* scratch = static_cast<char*>(kept_scratch(sorted_bytes + temp_bytes));
  if (scratch == nullptr) return;  // the CUDA error stays visible to the caller
  int32_t* sorted = reinterpret_cast<int32_t*>(scratch);
  cub::DeviceRadixSort::SortKeysDescending(scratch + sorted_bytes, temp_bytes, d_in, sorted, int64_t(n), 0, 32,
                                           stream);
  cudaMemcpyAsync(d_out, sorted, size_t(k) * sizeof(int32_t), cudaMemcpyDeviceToDevice, stream);
}

}  // namespace

extern "C" void topk(const int32_t* d_in, size_t n, int k, int32_t* d_out, cudaStream_t stream) {
  if (k < 1 || size_t(k) > n) {
    std::fprintf(stderr, "topk: k = %d is outside 1..n (n = %zu); d_out was not written\n", k, n);
    return;
  }
  if (k > max_k) {
    topk_by_full_sort(d_in, n, k, d_out, stream);
    return;
  }
  const size_t blocks = (n + threads_per_block - 1) / threads_per_block;  // one element per thread
  int32_t* block_results = static_cast<int32_t*>(kept_scratch(blocks * k * sizeof(int32_t)));
  if (block_results == nullptr) return;
  topk_per_block_kernel<<<unsigned(blocks), threads_per_block, 0, stream>>>(d_in, n, k, block_results);
  topk_per_block_kernel<<<1, threads_per_block, 0, stream>>>(block_results, blocks * k, k, d_out);
}
