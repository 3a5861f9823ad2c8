// Part 2's yardsticks, behind the contract's shape: the checks (test_topk.cu) show the first in
// the grader's reports beside the reference, and the benchmark (bench_topk.cu) times them all.
// Each takes the part 1 top-k to run (the reference's), so that only where the input lies
// differs between them.
#pragma once

#include "topk.h"

#include <labkit/cuda_check.h>

using TopkFunction = void (*)(const int32_t*, size_t, int, int32_t*, cudaStream_t);

// The way without unified memory: an explicit copy of the managed input into device memory
// (`d_copy`, n values), then the top-k of the copy.
inline void copy_then_topk(TopkFunction topk_fn, const int32_t* managed_in, int32_t* d_copy, size_t n, int k,
                           int32_t* d_out, cudaStream_t stream) {
  CUDA_CHECK(cudaMemcpyAsync(d_copy, managed_in, n * sizeof(int32_t), cudaMemcpyDefault, stream));
  topk_fn(d_copy, n, k, d_out, stream);
}

// The location of `device`'s memory, or of the host's (device = cudaCpuDeviceId), for the
// prefetch and advice calls of the CUDA 13 runtime, which take a cudaMemLocation.
inline cudaMemLocation memory_location(int device) {
  cudaMemLocation location{};
  location.type = device == cudaCpuDeviceId ? cudaMemLocationTypeHost : cudaMemLocationTypeDevice;
  location.id = device == cudaCpuDeviceId ? 0 : device;
  return location;
}

inline int current_device_ordinal() {
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  return device;
}

// cudaMemPrefetchAsync of the whole input to the current device, on `stream`.
inline void prefetch_to_gpu(const int32_t* managed_in, size_t n, cudaStream_t stream) {
#if CUDART_VERSION >= 13000
  CUDA_CHECK(cudaMemPrefetchAsync(managed_in, n * sizeof(int32_t), memory_location(current_device_ordinal()), 0, stream));
#else
  CUDA_CHECK(cudaMemPrefetchAsync(managed_in, n * sizeof(int32_t), current_device_ordinal(), stream));
#endif
}

// cudaMemAdvise(advice) of the whole input for the current device.
inline void advise_for_gpu(const int32_t* managed_in, size_t n, cudaMemoryAdvise advice) {
#if CUDART_VERSION >= 13000
  CUDA_CHECK(cudaMemAdvise(managed_in, n * sizeof(int32_t), advice, memory_location(current_device_ordinal())));
#else
  CUDA_CHECK(cudaMemAdvise(managed_in, n * sizeof(int32_t), advice, current_device_ordinal()));
#endif
}
