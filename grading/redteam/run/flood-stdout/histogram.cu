// Counts correctly, and prints 160 MB on every call (a debugging printf left in a loop): the
// output past the cap is dropped with a note; the verdicts stand.
#include "histogram.h"

#include <cstdio>
#include <cstring>

__global__ void count_global(const uint8_t* in, size_t n, uint32_t* bins) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    atomicAdd(&bins[in[i]], 1u);
}

extern "C" void histogram(const uint8_t* d_in, size_t n, uint32_t* d_bins, cudaStream_t stream) {
  static char line[1 << 20];
  std::memset(line, 'x', sizeof line - 1);
  for (int i = 0; i < 80; ++i) {
    std::fwrite(line, 1, sizeof line - 1, stdout);
    std::fwrite(line, 1, sizeof line - 1, stderr);
  }
  std::fflush(stdout);
  cudaMemsetAsync(d_bins, 0, 256 * sizeof(uint32_t), stream);
  count_global<<<264, 256, 0, stream>>>(d_in, n, d_bins);
}
