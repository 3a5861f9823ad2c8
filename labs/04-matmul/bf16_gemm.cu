// Lab 04 part 2 starter: the chapter's 32x32 shared-memory tiled kernel (rung 2 of part 1),
// reading BF16 instead of FP32. Each element of A and B is converted to FP32 as it goes into
// shared memory, and every multiply-add is an FP32 FMA.
//
// It is correct, edges and alpha/beta included, and its limit is the units it runs on: FP32
// FMAs on the CUDA cores, which on an H100 peak at about a fifteenth of what the tensor cores
// do on BF16. The README's part 2 moves the inner loop onto the tensor cores, one step at a
// time (WMMA, then mma.sync with ldmatrix and cp.async).
#include "sgemm.h"

namespace {

constexpr int tile = 32;

__global__ void bf16_gemm_fp32_tiled_kernel(int m, int n, int k, float alpha, const __nv_bfloat16* a,
                                            const __nv_bfloat16* b, float beta, float* c) {
  __shared__ float tile_a[tile][tile];
  __shared__ float tile_b[tile][tile];
  const int col = blockIdx.x * tile + threadIdx.x;
  const int row = blockIdx.y * tile + threadIdx.y;
  float dot = 0.f;
  for (int p0 = 0; p0 < k; p0 += tile) {
    const int pa = p0 + threadIdx.x, pb = p0 + threadIdx.y;
    // Zeros past the matrix: the last tile in each direction is partial.
    tile_a[threadIdx.y][threadIdx.x] = row < m && pa < k ? __bfloat162float(a[size_t(row) * k + pa]) : 0.f;
    tile_b[threadIdx.y][threadIdx.x] = pb < k && col < n ? __bfloat162float(b[size_t(pb) * n + col]) : 0.f;
    __syncthreads();
    for (int e = 0; e < tile; ++e) dot += tile_a[threadIdx.y][e] * tile_b[e][threadIdx.x];
    __syncthreads();
  }
  if (row >= m || col >= n) return;
  float* out = c + size_t(row) * n + col;
  // With beta == 0, C is output only and may hold NaN: 0 * NaN would be NaN, so don't read it.
  *out = beta == 0.f ? alpha * dot : alpha * dot + beta * *out;
}

}  // namespace

extern "C" void bf16_gemm(int m, int n, int k, float alpha, const __nv_bfloat16* d_a, const __nv_bfloat16* d_b,
                          float beta, float* d_c, cudaStream_t stream) {
  const dim3 block(tile, tile);
  const dim3 grid((n + tile - 1) / tile, (m + tile - 1) / tile);
  bf16_gemm_fp32_tiled_kernel<<<grid, block, 0, stream>>>(m, n, k, alpha, d_a, d_b, beta, d_c);
}
