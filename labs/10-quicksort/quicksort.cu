// Lab 10 starter: the chapter's cdp_simple_quicksort, ported to CUDA 12+ dynamic parallelism
// (CDP2). One thread per segment: it picks the middle key as the pivot, partitions the
// segment with two pointers (Hoare), and launches one <<<1, 1>>> child kernel per side.
// Below INSERTION_SORT keys, or at MAX_DEPTH levels of recursion, the thread sorts the
// whole segment itself with a selection sort.
//
// The port: the chapter's version created a device-side stream per child and set
// cudaLimitDevRuntimeSyncDepth, the legacy (CDP1) device runtime's way of letting a parent
// wait for its children. CUDA 12 removed device-side cudaDeviceSynchronize and that limit.
// Here the children go to cudaStreamFireAndForget: they start independently of their
// parent, and the parent needs no result from them, because a grid is complete only when
// all of its children are, so the host's stream is done when every segment is.
//
// It is correct, and slow: every partition is one thread walking its segment key by key,
// so the first level alone is n sequential steps. And when the middle key is a bad pivot
// (on an organ-pipe input, the largest or second-largest key of each segment it splits),
// each split peels off a few keys, MAX_DEPTH is reached with almost the whole array left, and one thread selection-sorts
// it: O(n^2) steps. The README shows how to partition with a whole block or grid, pick a
// pivot that does not fall into that trap, and sort small segments in shared memory.
#include "quicksort.h"

namespace {

constexpr int max_depth = 16;       // the chapter's MAX_DEPTH (the hardware allows 24 levels)
constexpr int insertion_sort = 32;  // the chapter's INSERTION_SORT: segments this short are sorted directly

// One thread sorts data[left..right] (inclusive) by selection: O(size^2).
__device__ void selection_sort(uint32_t* data, int left, int right) {
  for (int i = left; i <= right; ++i) {
    uint32_t min_value = data[i];
    int min_index = i;
    for (int j = i + 1; j <= right; ++j) {
      const uint32_t value = data[j];
      if (value < min_value) {
        min_index = j;
        min_value = value;
      }
    }
    if (min_index != i) {
      data[min_index] = data[i];
      data[i] = min_value;
    }
  }
}

// Sorts data[left..right] (inclusive). Launched <<<1, 1>>>: one thread does all the work.
__global__ void simple_quicksort_kernel(uint32_t* data, int left, int right, int depth) {
  if (depth >= max_depth || right - left <= insertion_sort) {
    selection_sort(data, left, right);
    return;
  }
  uint32_t* left_ptr = data + left;
  uint32_t* right_ptr = data + right;
  const uint32_t pivot = data[(left + right) / 2];

  // Hoare's partition: move the pointers toward each other, swapping keys on the wrong side.
  while (left_ptr <= right_ptr) {
    uint32_t left_value = *left_ptr;
    uint32_t right_value = *right_ptr;
    while (left_value < pivot) left_value = *++left_ptr;
    while (right_value > pivot) right_value = *--right_ptr;
    if (left_ptr <= right_ptr) {
      *left_ptr++ = right_value;
      *right_ptr-- = left_value;
    }
  }

  // Each side gets its own child. Fire-and-forget: the children run independently, and the
  // parent finishes without waiting for them (CDP2 has no device-side synchronization).
  const int left_end = int(right_ptr - data);
  const int right_begin = int(left_ptr - data);
  if (left < left_end)
    simple_quicksort_kernel<<<1, 1, 0, cudaStreamFireAndForget>>>(data, left, left_end, depth + 1);
  if (right_begin < right)
    simple_quicksort_kernel<<<1, 1, 0, cudaStreamFireAndForget>>>(data, right_begin, right, depth + 1);
}

// A launch from the device that finds no free slot fails (the default is 2048 slots for
// launches not yet started). The depth limit bounds the tree at 2^17 launches in all.
void reserve_device_launches() {
  static const bool reserved = [] {
    const size_t wanted = size_t(1) << 17;
    size_t current = 0;
    const bool known = cudaDeviceGetLimit(&current, cudaLimitDevRuntimePendingLaunchCount) == cudaSuccess;
    if (!known) (void)cudaGetLastError();
    if (known && current >= wanted) return true;  // never lower a limit someone else raised
    const bool ok = cudaDeviceSetLimit(cudaLimitDevRuntimePendingLaunchCount, wanted) == cudaSuccess;
    if (!ok) (void)cudaGetLastError();  // leave no error behind for the caller to find
    return ok;
  }();
  (void)reserved;
}

}  // namespace

// The chapter's sort works in place and needs no temporary memory.
extern "C" size_t quicksort_temp_bytes(size_t) { return 0; }

extern "C" void quicksort(uint32_t* d_keys, size_t n, void* d_temp, size_t temp_bytes, cudaStream_t stream) {
  (void)d_temp;
  (void)temp_bytes;
  if (n <= 1) return;
  reserve_device_launches();
  simple_quicksort_kernel<<<1, 1, 0, stream>>>(d_keys, 0, int(n - 1), 0);
}
