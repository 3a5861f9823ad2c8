// The honest twin of private-context-sgemm: the same coalesced kernel, on the stream it is
// handed. What it earns is what the cheat may earn at most.
#include "sgemm.h"

namespace {

// Threads take consecutive columns: coalesced, but no reuse of A or B.
__global__ void sgemm_coalesced(int m, int n, int k, float alpha, const float* a, const float* b, float beta,
                                float* c) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= m || col >= n) return;
  float dot = 0.f;
  for (int p = 0; p < k; ++p) dot += a[size_t(row) * k + p] * b[size_t(p) * n + col];
  float* out = c + size_t(row) * n + col;
  *out = beta == 0.f ? alpha * dot : alpha * dot + beta * *out;
}

}  // namespace

extern "C" void sgemm(int m, int n, int k, float alpha, const float* d_a, const float* d_b, float beta,
                      float* d_c, cudaStream_t stream) {
  const dim3 block(32, 8);
  const dim3 grid((n + 31) / 32, (m + 7) / 8);
  sgemm_coalesced<<<grid, block, 0, stream>>>(m, n, k, alpha, d_a, d_b, beta, d_c);
}
