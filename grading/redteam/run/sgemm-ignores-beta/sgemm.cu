// Wrong on purpose: writes alpha*AB and forgets beta*C. Expected: every case with beta != 0
// fails with "C came back as alpha*A*B: the beta*C term is missing"; the others pass.
#include "sgemm.h"

namespace {
__global__ void no_beta_kernel(int m, int n, int k, float alpha, const float* a, const float* b, float* c) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= m || col >= n) return;
  float dot = 0.f;
  for (int p = 0; p < k; ++p) dot += a[size_t(row) * k + p] * b[size_t(p) * n + col];
  c[size_t(row) * n + col] = alpha * dot;
}
}  // namespace

extern "C" void sgemm(int m, int n, int k, float alpha, const float* d_a, const float* d_b, float,
                      float* d_c, cudaStream_t stream) {
  const dim3 block(32, 8), grid((n + 31) / 32, (m + 7) / 8);
  no_beta_kernel<<<grid, block, 0, stream>>>(m, n, k, alpha, d_a, d_b, d_c);
}
