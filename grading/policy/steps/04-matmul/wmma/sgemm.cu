// Part 1 of the wmma step: the coalesced step's sgemm.cu (steps/04-matmul/coalesced/), unchanged;
// the step is about part 2 (bf16_gemm.cu beside it).
//
// Policy step for lab 04: the planted flaw fixed, and nothing else: the coalesced mapping.
//
// The starter is the OpenCL chapter's first mapping (RunAsGpu_1): threadIdx.x picks the row,
// so the 32 threads of a warp load from 32 different rows of A and store to 32 different rows
// of C. Here the two thread dimensions swap roles, the OpenCL chapter's second mapping
// (RunAsGpu_2): threadIdx.x picks the column, so a warp loads 32 neighbouring floats of B,
// stores 32 neighbouring floats of C, and all its threads read the same element of A (a
// broadcast). Blocks are 32 wide (a warp along a row of C) and 8 tall, the starter's 256
// threads. Same arithmetic, same result; no shared memory, no reuse of loaded data.
//
// Why it is a tier: it is the OpenCL chapter's whole lesson and the README's rung 1, one
// step short of the tiled chapter's shared-memory tiles (the chapter tier). It must earn more
// than the starter and less than the chapter's tiles.
// Follows seed 002_95ffd4bafb7211aa.txt (the two index mappings); lab README, "Rung 1:
// coalescing".
#include "sgemm.h"

namespace {

constexpr int cols_per_block = 32;  // threadIdx.x: consecutive threads, consecutive columns
constexpr int rows_per_block = 8;   // threadIdx.y

__global__ void sgemm_coalesced_kernel(int m, int n, int k, float alpha, const float* a, const float* b, float beta,
                                       float* c) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
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
  const dim3 block(cols_per_block, rows_per_block);
  const dim3 grid((n + cols_per_block - 1) / cols_per_block, (m + rows_per_block - 1) / rows_per_block);
  sgemm_coalesced_kernel<<<grid, block, 0, stream>>>(m, n, k, alpha, d_a, d_b, beta, d_c);
}
