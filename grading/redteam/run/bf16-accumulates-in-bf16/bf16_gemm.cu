// Wrong on purpose: part 2's starter with its running sum kept in BF16 (each FMA's result
// rounded to 8 bits of significand), widened to FP32 only at the end. Expected: every part 2
// case fails except 17x33x65-keep-c (alpha = 0) and 1x1x1 where the one product happens to
// fit in BF16; the checks name 16-bit sums. Part 1 is the kit's starter.
#include "sgemm.h"

namespace {

constexpr int tile = 32;

__global__ void bf16_sum_kernel(int m, int n, int k, float alpha, const __nv_bfloat16* a, const __nv_bfloat16* b,
                                float beta, float* c) {
  __shared__ float tile_a[tile][tile];
  __shared__ float tile_b[tile][tile];
  const int col = blockIdx.x * tile + threadIdx.x;
  const int row = blockIdx.y * tile + threadIdx.y;
  __nv_bfloat16 dot = __float2bfloat16(0.f);
  for (int p0 = 0; p0 < k; p0 += tile) {
    const int pa = p0 + threadIdx.x, pb = p0 + threadIdx.y;
    tile_a[threadIdx.y][threadIdx.x] = row < m && pa < k ? __bfloat162float(a[size_t(row) * k + pa]) : 0.f;
    tile_b[threadIdx.y][threadIdx.x] = pb < k && col < n ? __bfloat162float(b[size_t(pb) * n + col]) : 0.f;
    __syncthreads();
    for (int e = 0; e < tile; ++e)
      dot = __float2bfloat16(__bfloat162float(dot) + tile_a[threadIdx.y][e] * tile_b[e][threadIdx.x]);
    __syncthreads();
  }
  if (row >= m || col >= n) return;
  float* out = c + size_t(row) * n + col;
  const float sum = __bfloat162float(dot);
  *out = beta == 0.f ? alpha * sum : alpha * sum + beta * *out;
}

}  // namespace

extern "C" void bf16_gemm(int m, int n, int k, float alpha, const __nv_bfloat16* d_a, const __nv_bfloat16* d_b,
                          float beta, float* d_c, cudaStream_t stream) {
  const dim3 block(tile, tile);
  const dim3 grid((n + tile - 1) / tile, (m + tile - 1) / tile);
  bf16_sum_kernel<<<grid, block, 0, stream>>>(m, n, k, alpha, d_a, d_b, beta, d_c);
}
