// Dereferences a device pointer on the host.
#include "histogram.h"

extern "C" void histogram(const uint8_t* d_in, size_t, uint32_t* d_bins, cudaStream_t) {
  d_bins[0] = d_in[0];
}
