#include "labkit/sample_start.h"

#include "labkit/cuda_check.h"
#include "labkit/device.h"

#include <cstddef>

namespace labkit {

namespace {

__global__ void l2_flush_kernel(int4* buffer, std::size_t count, int salt) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < count;
       i += std::size_t(gridDim.x) * blockDim.x)
    buffer[i] = make_int4(salt, salt, salt, salt);
}

__global__ void empty_kernel() {}

// Persisting-L2 lines would let one sample warm the next: no set-aside, and reset each time.
void reset_persisting_l2() {
  static const bool limit_cleared = [] {
    cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 0);  // unsupported before Ampere: ignore
    cudaGetLastError();
    return true;
  }();
  (void)limit_cleared;
  cudaCtxResetPersistingL2Cache();
  cudaGetLastError();
}

// Plain device memory, kept for the process's life: no other process maps it.
struct FlushBuffer {
  FlushBuffer() : count(2 * current_device().l2_bytes / sizeof(int4) + 1) {
    CUDA_CHECK(cudaMalloc(&data, count * sizeof(int4)));
  }
  int4* data = nullptr;
  std::size_t count;
};

}  // namespace

void flush_l2(cudaStream_t stream) {
  static const FlushBuffer buffer;
  static int salt = 0;
  reset_persisting_l2();
  l2_flush_kernel<<<current_device().sm_count * 4, 512, 0, stream>>>(buffer.data, buffer.count, ++salt);
  CUDA_CHECK(cudaGetLastError());
}

void wake_every_device() {
  int count = 1;
  CUDA_CHECK(cudaGetDeviceCount(&count));
  for (int device = 0; device < count; ++device) {
    CUDA_CHECK(cudaSetDevice(device));
    empty_kernel<<<1, 1>>>();
    CUDA_CHECK(cudaDeviceSynchronize());
  }
  CUDA_CHECK(cudaSetDevice(0));
}

}  // namespace labkit
