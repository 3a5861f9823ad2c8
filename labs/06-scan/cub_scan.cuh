// The library anchor of lab 06: cub::DeviceScan::InclusiveSum behind the lab's contract
// (scan.h), owning its scratch. The sums are taken as uint32_t, which wraps around exactly as
// the contract asks of int32_t (without signed overflow). The benchmark (bench_scan.cu) and the
// grader's reports (test_scan.cu) show the reference beside it.
#pragma once

#include "scan.h"

#include <labkit/buffer.h>

#include <cub/device/device_scan.cuh>

class CubInclusiveSum {
public:
  explicit CubInclusiveSum(size_t n) : scratch_(scratch_bytes(n)) {}

  void operator()(const int32_t* in, size_t n, int32_t* out, cudaStream_t stream) {
    size_t bytes = scratch_.size();
    cub::DeviceScan::InclusiveSum(scratch_.data(), bytes, reinterpret_cast<const uint32_t*>(in),
                                  reinterpret_cast<uint32_t*>(out), int64_t(n), stream);
  }

private:
  static size_t scratch_bytes(size_t n) {
    size_t bytes = 0;
    cub::DeviceScan::InclusiveSum(nullptr, bytes, static_cast<const uint32_t*>(nullptr),
                                  static_cast<uint32_t*>(nullptr), int64_t(n));
    return bytes;
  }

  labkit::DeviceBuffer<uint8_t> scratch_;
};
