// Gives up with abort() once the input is large.
#include "histogram.h"

#include <cstdlib>

extern "C" void histogram(const uint8_t*, size_t n, uint32_t* d_bins, cudaStream_t stream) {
  if (n > 1000) std::abort();
  cudaMemsetAsync(d_bins, 0, 256 * sizeof(uint32_t), stream);
}
