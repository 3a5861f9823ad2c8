// Output checks that run where the output lies. A timed sample's output is judged on the GPU,
// and only an output found wrong is downloaded, so that the host can say where it is wrong.
// Judging every sample on the host costs two downloads of up to a GiB and a pass over them:
// seconds per sample of a large case, with the GPU held alone for timing all the while.
#pragma once

#include "labkit/buffer.h"
#include "labkit/compare.h"
#include "labkit/cuda_check.h"

#include <cuda_runtime.h>

#include <cstddef>
#include <type_traits>
#include <vector>

namespace labkit {

namespace detail {

template <class IsWrong>
__global__ void count_wrong_kernel(std::size_t count, IsWrong is_wrong, unsigned long long* wrong) {
  unsigned long long local = 0;
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < count; i += stride)
    local += is_wrong(i) ? 1 : 0;
  for (int offset = 16; offset > 0; offset /= 2) local += __shfl_down_sync(0xffffffffu, local, offset);
  if (threadIdx.x % 32 == 0 && local > 0) atomicAdd(wrong, local);
}

}  // namespace detail

// How many of the elements 0..count-1 `is_wrong(i)` (a functor callable on the device) finds
// wrong, counted on the current device. Its arrays must be readable there.
template <class IsWrong>
std::size_t count_wrong_on_device(std::size_t count, IsWrong is_wrong) {
  DeviceBuffer<unsigned long long> wrong(1);
  CUDA_CHECK(cudaMemset(wrong.data(), 0, sizeof(unsigned long long)));
  if (count > 0) {
    constexpr int threads = 256;
    const std::size_t blocks_needed = (count + threads - 1) / threads;
    const unsigned blocks = unsigned(blocks_needed < 4096 ? blocks_needed : 4096);
    detail::count_wrong_kernel<<<blocks, threads>>>(count, is_wrong, wrong.data());
    CUDA_CHECK_KERNELS(nullptr);
  }
  return std::size_t(wrong.download()[0]);
}

template <class T>
struct DiffersFrom {
  const T* expected;
  const T* actual;
  __device__ bool operator()(std::size_t i) const { return expected[i] != actual[i]; }
};

// compare_exact of two arrays in device memory (the current device's, or reachable from it):
// counted on the GPU, and downloaded to list the first mismatches only when there are any.
// Integers only: compare floats by their bits (reinterpret the pointers as std::uint32_t).
template <class T>
Comparison compare_exact_on_device(const T* expected, const T* actual, std::size_t count) {
  static_assert(std::is_integral_v<T>, "compare integers, or floats as their bits");
  if (count_wrong_on_device(count, DiffersFrom<T>{expected, actual}) == 0) {
    Comparison same;
    same.checked = count;
    return same;
  }
  return compare_exact(download(expected, count), download(actual, count));
}

}  // namespace labkit
