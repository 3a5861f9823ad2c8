// The library anchors of lab 07, behind the lab's contract (compact.h) and owning their
// scratch: cub::DeviceSelect::If for compact_positive, and cub::DevicePartition::If followed by
// a reversal of the rejected tail for split_positive (CUB writes the rejected elements in
// reverse order; reversing them back is CUB's fastest way to the contract's stable split). The
// benchmark (bench_compact.cu) and the grader's reports (test_compact.cu) show the reference
// beside them.
#pragma once

#include "compact.h"

#include <labkit/buffer.h>
#include <labkit/cuda_check.h>

#include <cub/device/device_partition.cuh>
#include <cub/device/device_select.cuh>

#include <algorithm>

namespace cub_compact {

struct IsPositive {
  __host__ __device__ bool operator()(float x) const { return x > 0.f; }
};

namespace {

__global__ void reverse_tail_kernel(float* out, size_t n, const size_t* kept_count) {
  const size_t tail = n - *kept_count;
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < tail / 2; i += size_t(gridDim.x) * blockDim.x) {
    const float front = out[*kept_count + i];
    out[*kept_count + i] = out[n - 1 - i];
    out[n - 1 - i] = front;
  }
}

}  // namespace

class Select {
public:
  explicit Select(size_t n) : scratch_(scratch_bytes(n)) {}

  void operator()(const float* in, size_t n, float* out, size_t* count, cudaStream_t stream) {
    size_t bytes = scratch_.size();
    cub::DeviceSelect::If(scratch_.data(), bytes, in, out, count, int64_t(n), IsPositive{}, stream);
  }

private:
  static size_t scratch_bytes(size_t n) {
    size_t bytes = 0;
    cub::DeviceSelect::If(nullptr, bytes, static_cast<const float*>(nullptr), static_cast<float*>(nullptr),
                          static_cast<size_t*>(nullptr), int64_t(n), IsPositive{});
    return bytes;
  }

  labkit::DeviceBuffer<uint8_t> scratch_;
};

class StableSplit {
public:
  explicit StableSplit(size_t n) : kept_(1), scratch_(scratch_bytes(n)) {}

  void operator()(const float* in, size_t n, float* out, cudaStream_t stream) {
    partition(in, n, out, kept_.data(), stream);
    const unsigned blocks = unsigned(std::max<size_t>(1, (n / 2 + 255) / 256));
    reverse_tail_kernel<<<blocks, 256, 0, stream>>>(out, n, kept_.data());
    CUDA_CHECK(cudaGetLastError());
  }

  // CUB's partition alone: the rejected elements come out in reverse order.
  void partition(const float* in, size_t n, float* out, size_t* kept, cudaStream_t stream) {
    size_t bytes = scratch_.size();
    cub::DevicePartition::If(scratch_.data(), bytes, in, out, kept, int64_t(n), IsPositive{}, stream);
  }

private:
  static size_t scratch_bytes(size_t n) {
    size_t bytes = 0;
    cub::DevicePartition::If(nullptr, bytes, static_cast<const float*>(nullptr), static_cast<float*>(nullptr),
                             static_cast<size_t*>(nullptr), int64_t(n), IsPositive{});
    return bytes;
  }

  labkit::DeviceBuffer<size_t> kept_;
  labkit::DeviceBuffer<uint8_t> scratch_;
};

}  // namespace cub_compact
