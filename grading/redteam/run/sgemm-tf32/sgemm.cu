// Wrong on purpose: rounds A and B to TF32 (10-bit mantissa) before multiplying, as TF32 tensor
// cores do. Expected: every case fails except those with alpha = 0 (*-keep-c), where A B
// does not matter: the tolerance is FP32's, a few hundred times tighter than TF32's error.
#include "sgemm.h"

namespace {
__device__ float to_tf32(float x) { return __uint_as_float((__float_as_uint(x) + 0x1000u) & 0xFFFFE000u); }

__global__ void tf32_kernel(int m, int n, int k, float alpha, const float* a, const float* b, float beta,
                            float* c) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= m || col >= n) return;
  float dot = 0.f;
  for (int p = 0; p < k; ++p) dot += to_tf32(a[size_t(row) * k + p]) * to_tf32(b[size_t(p) * n + col]);
  float* out = c + size_t(row) * n + col;
  *out = beta == 0.f ? alpha * dot : alpha * dot + beta * *out;
}
}  // namespace

extern "C" void sgemm(int m, int n, int k, float alpha, const float* d_a, const float* d_b, float beta,
                      float* d_c, cudaStream_t stream) {
  const dim3 block(32, 8), grid((n + 31) / 32, (m + 7) / 8);
  tf32_kernel<<<grid, block, 0, stream>>>(m, n, k, alpha, d_a, d_b, beta, d_c);
}
