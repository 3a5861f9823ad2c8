// Calibration submission for the grading policy: lab 03 "the chapter's technique done right".
//
// Starter's flaws: insert_value returned early when the value was already held, so equal
// values vanished (the k largest *distinct* values, not the top k); and k above 48 was refused
// (d_out never written), the limit of threads_per_block * k ints of static shared memory.
// Changes, and only these:
//   - insert_value no longer skips values it already holds (the first loop is gone), so
//     equal values count separately; the rest of the insertion is the chapter's;
//   - for k > 48, where the chapter's design cannot go, the chapter's own advice: "for a large
//     TOPN, better to do a full sort" (it names cuBLAS or Thrust; Thrust is forbidden here, so
//     cub::DeviceRadixSort, which lab.yaml allows), sorting all n descending into scratch and
//     copying the first k out.
// Kept: the max-reduction framework as the chapter extends it (one element per thread, a
// sorted array of k per thread, the shared-memory tree merge with its two __syncthreads(),
// a second launch of the same kernel as a single block), 256 threads per block.
// Follows seed 003_8af6bbd68b7a2efc.txt: the top-k kernel built from the max framework
// (2_1.cu with TOPK), the 48 KiB finding ("BLOCK_SIZE=256 ... TOPK 最大能到48") and the
// conclusion "对于TOPN较大,还不如直接...做完全排序"; lab README, "What the chapter does".
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

// Past the chapter's k: sort everything, largest first, and keep the first k.
void topk_by_full_sort(const int32_t* d_in, size_t n, int k, int32_t* d_out, cudaStream_t stream) {
  size_t temp_bytes = 0;
  cub::DeviceRadixSort::SortKeysDescending(nullptr, temp_bytes, d_in, static_cast<int32_t*>(nullptr), int64_t(n), 0,
                                           32, stream);
  int32_t* sorted = nullptr;
  void* temp = nullptr;
  cudaMallocAsync(&sorted, n * sizeof(int32_t), stream);
  cudaMallocAsync(&temp, temp_bytes, stream);
  cub::DeviceRadixSort::SortKeysDescending(temp, temp_bytes, d_in, sorted, int64_t(n), 0, 32, stream);
  cudaMemcpyAsync(d_out, sorted, size_t(k) * sizeof(int32_t), cudaMemcpyDeviceToDevice, stream);
  cudaFreeAsync(temp, stream);
  cudaFreeAsync(sorted, stream);
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
  int32_t* block_results = nullptr;
  cudaMallocAsync(&block_results, blocks * k * sizeof(int32_t), stream);
  topk_per_block_kernel<<<unsigned(blocks), threads_per_block, 0, stream>>>(d_in, n, k, block_results);
  topk_per_block_kernel<<<1, threads_per_block, 0, stream>>>(block_results, blocks * k, k, d_out);
  cudaFreeAsync(block_results, stream);
}
