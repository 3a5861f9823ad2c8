// Lets CUB do the lab's work.
#include "histogram.h"

#include <cub/device/device_histogram.cuh>

extern "C" void histogram(const uint8_t* d_in, size_t n, uint32_t* d_bins, cudaStream_t stream) {
  size_t bytes = 0;
  cub::DeviceHistogram::HistogramEven(nullptr, bytes, d_in, reinterpret_cast<int*>(d_bins), 257, 0, 256, int64_t(n), stream);
  void* scratch = nullptr;
  cudaMallocAsync(&scratch, bytes, stream);
  cub::DeviceHistogram::HistogramEven(scratch, bytes, d_in, reinterpret_cast<int*>(d_bins), 257, 0, 256, int64_t(n), stream);
  cudaFreeAsync(scratch, stream);
}
