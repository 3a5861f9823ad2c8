// The library anchors of lab 02, behind the lab's contract (dot.h), each owning its scratch:
// cub::DeviceReduce::TransformReduce over the products a[i] * b[i] (dot), and
// cub::DeviceReduce::ArgMax (part 2, argmax_float). The benchmark (bench_dot.cu) and the
// grader's reports (test_dot.cu) show the reference beside them.
#pragma once

#include "dot.h"

#include <labkit/buffer.h>

#include <cub/device/device_reduce.cuh>
#include <thrust/iterator/counting_iterator.h>

class CubDot {
public:
  explicit CubDot(size_t n) : scratch_(scratch_bytes(n)) {}

  void operator()(const int32_t* a, const int32_t* b, size_t n, int64_t* result, cudaStream_t stream) {
    size_t bytes = scratch_.size();
    cub::DeviceReduce::TransformReduce(scratch_.data(), bytes, thrust::counting_iterator<int64_t>(0), result,
                                       int64_t(n), Plus{}, Product{a, b}, int64_t(0), stream);
  }

  // Public: the host stubs nvcc writes for CUB's kernels name these types.
  struct Product {
    const int32_t* a;
    const int32_t* b;
    __device__ int64_t operator()(int64_t i) const { return int64_t(a[i]) * b[i]; }
  };

  // Wraps around like the contract's sum (two's complement), without signed overflow.
  struct Plus {
    __device__ int64_t operator()(int64_t x, int64_t y) const { return int64_t(uint64_t(x) + uint64_t(y)); }
  };

private:
  static size_t scratch_bytes(size_t n) {
    size_t bytes = 0;
    cub::DeviceReduce::TransformReduce(nullptr, bytes, thrust::counting_iterator<int64_t>(0),
                                       static_cast<int64_t*>(nullptr), int64_t(n), Plus{}, Product{}, int64_t(0));
    return bytes;
  }

  labkit::DeviceBuffer<uint8_t> scratch_;
};

// cub::DeviceReduce::ArgMax keeps the first of equal values under `>`, as the contract does
// (-0.0f and +0.0f compare equal). CCCL 2.8 (CUDA 12.9) added the form that writes the index
// as an int64_t; older CUBs write a KeyValuePair, unpacked here by one small kernel.
#if CUB_VERSION >= 200800
class CubArgmax {
public:
  explicit CubArgmax(size_t n) : scratch_(scratch_bytes(n)), max_(1) {}

  void operator()(const float* in, size_t n, int64_t* index, cudaStream_t stream) {
    size_t bytes = scratch_.size();
    cub::DeviceReduce::ArgMax(scratch_.data(), bytes, in, max_.data(), index, int64_t(n), stream);
  }

private:
  static size_t scratch_bytes(size_t n) {
    size_t bytes = 0;
    cub::DeviceReduce::ArgMax(nullptr, bytes, static_cast<const float*>(nullptr), static_cast<float*>(nullptr),
                              static_cast<int64_t*>(nullptr), int64_t(n));
    return bytes;
  }

  labkit::DeviceBuffer<uint8_t> scratch_;
  labkit::DeviceBuffer<float> max_;
};
#else
__global__ void cub_argmax_unpack_kernel(const cub::KeyValuePair<int, float>* pair, int64_t* index) {
  *index = pair->key;
}

class CubArgmax {
public:
  explicit CubArgmax(size_t n) : scratch_(scratch_bytes(n)), pair_(1) {}

  void operator()(const float* in, size_t n, int64_t* index, cudaStream_t stream) {
    size_t bytes = scratch_.size();
    cub::DeviceReduce::ArgMax(scratch_.data(), bytes, in, pair_.data(), int(n), stream);
    cub_argmax_unpack_kernel<<<1, 1, 0, stream>>>(pair_.data(), index);
  }

private:
  static size_t scratch_bytes(size_t n) {
    size_t bytes = 0;
    cub::DeviceReduce::ArgMax(nullptr, bytes, static_cast<const float*>(nullptr),
                              static_cast<cub::KeyValuePair<int, float>*>(nullptr), int(n));
    return bytes;
  }

  labkit::DeviceBuffer<uint8_t> scratch_;
  labkit::DeviceBuffer<cub::KeyValuePair<int, float>> pair_;
};
#endif
