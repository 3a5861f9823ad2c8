// Detects the timed calls (the same large input buffer again and again) and, after doing the
// work once for each buffer, answers from a cache: a device-to-device copy of 1 KiB instead of
// reading the input. The checks copy a random one of several inputs into that buffer before
// every timed call and check every output, so the cached answer is caught.
#include "histogram.h"

#include <map>

namespace {

__global__ void count_shared(const uint8_t* in, size_t n, uint32_t* bins) {
  __shared__ uint32_t local[256];
  local[threadIdx.x] = 0;
  __syncthreads();
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    atomicAdd(&local[in[i]], 1u);
  __syncthreads();
  atomicAdd(&bins[threadIdx.x], local[threadIdx.x]);
}

struct Cached {
  int calls = 0;
  uint32_t* bins = nullptr;
};

}  // namespace

extern "C" void histogram(const uint8_t* d_in, size_t n, uint32_t* d_bins, cudaStream_t stream) {
  static std::map<const uint8_t*, Cached> cache;
  Cached& entry = cache[d_in];
  const size_t bytes = 256 * sizeof(uint32_t);
  if (n >= (size_t(1) << 30) && ++entry.calls > 2 && entry.bins != nullptr) {
    cudaMemcpyAsync(d_bins, entry.bins, bytes, cudaMemcpyDeviceToDevice, stream);
    return;
  }
  cudaMemsetAsync(d_bins, 0, bytes, stream);
  count_shared<<<264, 256, 0, stream>>>(d_in, n, d_bins);
  if (n >= (size_t(1) << 30)) {
    if (entry.bins == nullptr) cudaMalloc(&entry.bins, bytes);
    cudaMemcpyAsync(entry.bins, d_bins, bytes, cudaMemcpyDeviceToDevice, stream);
  }
}
