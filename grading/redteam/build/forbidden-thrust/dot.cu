// Lets Thrust compute the dot product.
#include "dot.h"

#include <thrust/execution_policy.h>
#include <thrust/inner_product.h>

extern "C" void dot(const int32_t* d_a, const int32_t* d_b, size_t n, int64_t* d_result, cudaStream_t stream) {
  const int64_t sum = thrust::inner_product(thrust::cuda::par.on(stream), d_a, d_a + n, d_b, int64_t(0));
  cudaMemcpyAsync(d_result, &sum, sizeof sum, cudaMemcpyHostToDevice, stream);
  cudaStreamSynchronize(stream);
}
