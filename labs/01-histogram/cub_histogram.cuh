// The library anchor of lab 01: cub::DeviceHistogram::HistogramEven behind the lab's contract
// (histogram.h), owning its scratch. The benchmark (bench_histogram.cu) and the grader's
// reports (test_histogram.cu) show the reference beside it.
#pragma once

#include "histogram.h"

#include <labkit/buffer.h>

#include <cub/device/device_histogram.cuh>

class CubHistogram {
public:
  static constexpr int bin_count = 256;

  explicit CubHistogram(size_t n) : scratch_(scratch_bytes(n)) {}

  // CUB counts into int bins: the same bits as the contract's uint32_t for any n below 2^31.
  void operator()(const uint8_t* in, size_t n, uint32_t* bins, cudaStream_t stream) {
    size_t bytes = scratch_.size();
    cub::DeviceHistogram::HistogramEven(scratch_.data(), bytes, in, reinterpret_cast<int*>(bins), bin_count + 1, 0,
                                        bin_count, int64_t(n), stream);
  }

private:
  static size_t scratch_bytes(size_t n) {
    size_t bytes = 0;
    cub::DeviceHistogram::HistogramEven(nullptr, bytes, static_cast<const uint8_t*>(nullptr),
                                        static_cast<int*>(nullptr), bin_count + 1, 0, bin_count, int64_t(n));
    return bytes;
  }

  labkit::DeviceBuffer<uint8_t> scratch_;
};
