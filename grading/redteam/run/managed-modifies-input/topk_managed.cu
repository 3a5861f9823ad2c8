// Part 2: prefetches and answers correctly, then "tidies up" by zeroing the managed input it was
// given (managed_in is const) on the GPU. The checks read the input back after the call.
#include "topk.h"

extern "C" void topk_managed(const int32_t* managed_in, size_t n, int k, int32_t* d_out, cudaStream_t stream) {
  int device = 0;
  cudaGetDevice(&device);
  cudaMemLocation location{};
  location.type = cudaMemLocationTypeDevice;
  location.id = device;
  cudaMemPrefetchAsync(managed_in, n * sizeof(int32_t), location, 0, stream);
  topk(managed_in, n, k, d_out, stream);
  cudaMemsetAsync(const_cast<int32_t*>(managed_in), 0, n * sizeof(int32_t), stream);
}
