// A typo: the report must show nvcc's own message, and the other labs still grade.
#include "histogram.h"

extern "C" void histogram(const uint8_t* d_in, size_t n, uint32_t* d_bins, cudaStream_t stream) {
  cudaMemsetAsync(d_bins, 0, 256 * sizeof(uint32_t), stream)
}
