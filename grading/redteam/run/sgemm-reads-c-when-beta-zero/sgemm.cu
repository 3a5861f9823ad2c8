// Wrong on purpose: computes alpha*AB + beta*C even when beta is 0, so the NaN the checks put in
// C shows through. Expected: every case with beta = 0 fails with "NaN in the output: C held NaN
// before the call and beta is 0"; the cases with beta != 0 pass.
#include "sgemm.h"

namespace {
__global__ void always_reads_c_kernel(int m, int n, int k, float alpha, const float* a, const float* b,
                                      float beta, float* c) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= m || col >= n) return;
  float dot = 0.f;
  for (int p = 0; p < k; ++p) dot += a[size_t(row) * k + p] * b[size_t(p) * n + col];
  c[size_t(row) * n + col] = alpha * dot + beta * c[size_t(row) * n + col];
}
}  // namespace

extern "C" void sgemm(int m, int n, int k, float alpha, const float* d_a, const float* d_b, float beta,
                      float* d_c, cudaStream_t stream) {
  const dim3 block(32, 8), grid((n + 31) / 32, (m + 7) / 8);
  always_reads_c_kernel<<<grid, block, 0, stream>>>(m, n, k, alpha, d_a, d_b, beta, d_c);
}
