// Lab 09 starter: the chapter's warp-level radix sort (radix_warp_sort). A warp holds 32
// keys, one per lane, and splits them by one bit at a time, from bit 0 to bit 31: a
// __ballot_sync of the bit tells every lane which lanes hold a 1, and __popc of that mask
// below the lane gives the lane its new place (zeros first, then ones, each group in its old
// order). After 32 splits the warp's keys are sorted.
//
// It is right for n <= 32 and silently wrong above: each warp sorts its own aligned run of
// 32 keys and no key ever leaves its run, so the whole array is not sorted. The README shows
// how to sort across the whole array: a digit histogram over all keys, a scan of it, and a
// scatter of every key to its place, one digit at a time.
#include "sort.h"

namespace {

constexpr int warp_size = 32;
constexpr int threads_per_block = 256;
constexpr int warps_per_block = threads_per_block / warp_size;
constexpr unsigned full_mask = 0xffffffffu;

// Lane l's view of the lanes below it: bits 0..l-1 set.
__device__ __forceinline__ unsigned lanes_below(int lane) { return (1u << lane) - 1u; }

// Each warp sorts the 32 keys d_keys[32 w .. 32 w + 31] of its own and writes them back in
// place. In the last, partial run, lanes past n take part in the ballots with no key.
__global__ void warp_split_sort_kernel(uint32_t* keys, size_t n) {
  __shared__ uint32_t s_data[warps_per_block][2][warp_size];  // ping-pong buffers per warp
  const int lane = threadIdx.x % warp_size;
  const int warp = threadIdx.x / warp_size;
  const size_t i = (size_t(blockIdx.x) * warps_per_block + warp) * warp_size + lane;
  const bool has_key = i < n;
  uint32_t key = has_key ? keys[i] : 0u;

  const unsigned active = __ballot_sync(full_mask, has_key);
  int buffer = 0;
  for (int bit = 0; bit < 32; ++bit) {
    const bool is_one = (key >> bit) & 1u;
    const unsigned ones = __ballot_sync(full_mask, has_key && is_one);  // the "histogram" of 1s
    const unsigned zeros = active & ~ones;
    // The split: zeros keep their order at the front, ones keep theirs after all zeros.
    const int position = is_one ? __popc(zeros) + __popc(ones & lanes_below(lane))
                                : __popc(zeros & lanes_below(lane));
    if (has_key) s_data[warp][buffer][position] = key;
    __syncwarp();
    if (has_key) key = s_data[warp][buffer][lane];
    buffer ^= 1;  // the next split writes the other buffer, so no lane overwrites a key unread
  }
  if (has_key) keys[i] = key;
}

}  // namespace

// The warp sort needs no temporary memory.
extern "C" size_t radix_sort_temp_bytes(size_t) { return 0; }

extern "C" void radix_sort(uint32_t* d_keys, size_t n, void* d_temp, size_t temp_bytes, cudaStream_t stream) {
  (void)d_temp;
  (void)temp_bytes;
  if (n == 0) return;
  // One warp per run of 32 keys, as many warps as the runs need.
  const size_t runs = (n + warp_size - 1) / warp_size;
  const size_t blocks = (runs + warps_per_block - 1) / warps_per_block;
  warp_split_sort_kernel<<<unsigned(blocks), threads_per_block, 0, stream>>>(d_keys, n);
}
