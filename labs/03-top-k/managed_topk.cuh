// Part 2's yardsticks, behind the contract's shape: the checks (test_topk.cu) show the first in
// the grader's reports beside the reference, and the benchmark (bench_topk.cu) times them all.
// Each takes the part 1 top-k to run (the reference's), so that only where the input lies
// differs between them.
#pragma once

#include "topk.h"

#include <labkit/cuda_check.h>
#include <labkit/managed_memory.h>

using TopkFunction = void (*)(const int32_t*, size_t, int, int32_t*, cudaStream_t);

// The way without unified memory: an explicit copy of the managed input into device memory
// (`d_copy`, n values), then the top-k of the copy.
inline void copy_then_topk(TopkFunction topk_fn, const int32_t* managed_in, int32_t* d_copy, size_t n, int k,
                           int32_t* d_out, cudaStream_t stream) {
  CUDA_CHECK(cudaMemcpyAsync(d_copy, managed_in, n * sizeof(int32_t), cudaMemcpyDefault, stream));
  topk_fn(d_copy, n, k, d_out, stream);
}

inline int current_device_ordinal() {
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  return device;
}

// cudaMemPrefetchAsync of the whole input to the current device, on `stream`.
inline void prefetch_to_gpu(const int32_t* managed_in, size_t n, cudaStream_t stream) {
  CUDA_CHECK(cudaMemPrefetchAsync(managed_in, n * sizeof(int32_t), labkit::memory_location(current_device_ordinal()), 0,
                                  stream));
}

// cudaMemAdvise(advice) of the whole input for the current device.
inline void advise_for_gpu(const int32_t* managed_in, size_t n, cudaMemoryAdvise advice) {
  CUDA_CHECK(cudaMemAdvise(managed_in, n * sizeof(int32_t), advice, labkit::memory_location(current_device_ordinal())));
}
