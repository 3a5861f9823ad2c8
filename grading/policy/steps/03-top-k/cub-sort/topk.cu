// Policy step for lab 03: the library baseline.
//
// cub::DeviceRadixSort::SortKeysDescending of all n values into a second buffer, then the
// first k copied to d_out: the library's only way to the k largest (CUB has no top-k), the
// lab.yaml names it as the baseline this lab beats, and it is what the kit's own anchor
// (cub_sort_topk.cuh) times beside the reference. Its scratch (the sorted copy and CUB's
// temporary storage) is kept between calls and grown when a call needs more, as the README
// tells: a cudaMallocAsync per call would get fresh memory from the system after every
// synchronisation the grader makes, and the baseline would measure allocation.
//
// Why it is a tier: allowed in this lab, correct for every k, and no selection at all: it
// reads and writes all n keys once per 8-bit digit where a top-k needs one read. It must
// earn more than the starter and less than the chapter's technique.
#include "topk.h"

#include <cub/device/device_radix_sort.cuh>

#include <cstdio>

namespace {

// The scratch kept between calls: the sorted copy of the input, then CUB's temporary storage.
// Grown when a call needs more; cudaFree waits for the calls still using the old one. Calls
// must not overlap (the grader never runs two at once).
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

}  // namespace

extern "C" void topk(const int32_t* d_in, size_t n, int k, int32_t* d_out, cudaStream_t stream) {
  if (k < 1 || size_t(k) > n) {
    std::fprintf(stderr, "topk: k = %d is outside 1..n (n = %zu); d_out was not written\n", k, n);
    return;
  }
  size_t sort_bytes = 0;
  cub::DeviceRadixSort::SortKeysDescending(nullptr, sort_bytes, d_in, static_cast<int32_t*>(nullptr), int64_t(n), 0,
                                           32, stream);
  const size_t sorted_bytes = round_up_256(n * sizeof(int32_t));
  char* scratch = static_cast<char*>(kept_scratch(sorted_bytes + sort_bytes));
  if (scratch == nullptr) return;  // the CUDA error stays visible to the caller
  int32_t* sorted = reinterpret_cast<int32_t*>(scratch);
  cub::DeviceRadixSort::SortKeysDescending(scratch + sorted_bytes, sort_bytes, d_in, sorted, int64_t(n), 0, 32,
                                           stream);
  cudaMemcpyAsync(d_out, sorted, size_t(k) * sizeof(int32_t), cudaMemcpyDeviceToDevice, stream);
}
