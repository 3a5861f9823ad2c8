// Lab 04 starter: the OpenCL chapter's first mapping (RunAsGpu_1) ported to CUDA. One thread
// computes one element of C; threadIdx.x picks the row and threadIdx.y the column.
//
// It is correct, edges and alpha/beta included, and slow: the 32 threads of a warp take 32
// consecutive rows of the same column, so each load of A and each store of C touches 32
// different rows. The README explains why that matters and what to change, one rung at a time.
#include "sgemm.h"

namespace {

constexpr int rows_per_block = 32;  // threadIdx.x: consecutive threads, consecutive rows
constexpr int cols_per_block = 8;   // threadIdx.y

__global__ void sgemm_naive_kernel(int m, int n, int k, float alpha, const float* a, const float* b, float beta,
                                   float* c) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  const int col = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= m || col >= n) return;

  float dot = 0.f;
  for (int p = 0; p < k; ++p) dot += a[size_t(row) * k + p] * b[size_t(p) * n + col];

  float* out = c + size_t(row) * n + col;
  // With beta == 0, C is output only and may hold NaN: 0 * NaN would be NaN, so don't read it.
  *out = beta == 0.f ? alpha * dot : alpha * dot + beta * *out;
}

}  // namespace

extern "C" void sgemm(int m, int n, int k, float alpha, const float* d_a, const float* d_b, float beta,
                      float* d_c, cudaStream_t stream) {
  const dim3 block(rows_per_block, cols_per_block);
  const dim3 grid((m + rows_per_block - 1) / rows_per_block, (n + cols_per_block - 1) / cols_per_block);
  sgemm_naive_kernel<<<grid, block, 0, stream>>>(m, n, k, alpha, d_a, d_b, beta, d_c);
}
