// Does not include the contract header, so the function gets a C++ (mangled) name and the
// grader cannot find `histogram`.
#include <cuda_runtime.h>
#include <cstdint>

void histogram(const uint8_t* d_in, size_t n, uint32_t* d_bins, cudaStream_t stream) {
  cudaMemsetAsync(d_bins, 0, 256 * sizeof(uint32_t), stream);
}
