#include "histogram.h"

extern "C" void histogram(const uint8_t* d_in, int n, uint32_t* d_bins) {
  cudaMemset(d_bins, 0, 256 * sizeof(uint32_t));
}
