// Wrong on purpose: the tiled chapter's kernel as printed, loads unguarded (stores guarded so
// it does not fault). Expected: every case whose m, n or k is not a multiple of 32 fails, with
// the hint "edge tiles read or write outside the matrix"; the others pass.
#include "sgemm.h"

namespace {
constexpr int tile = 32;

__global__ void tiled_unguarded_loads_kernel(int m, int n, int k, float alpha, const float* a, const float* b,
                                             float beta, float* c) {
  __shared__ float tile_a[tile][tile], tile_b[tile][tile];
  const int col = blockIdx.x * tile + threadIdx.x, row = blockIdx.y * tile + threadIdx.y;
  float dot = 0.f;
  for (int p0 = 0; p0 < k; p0 += tile) {
    tile_a[threadIdx.y][threadIdx.x] = a[size_t(row) * k + p0 + threadIdx.x];
    tile_b[threadIdx.y][threadIdx.x] = b[size_t(p0 + threadIdx.y) * n + col];
    __syncthreads();
    for (int e = 0; e < tile; ++e) dot += tile_a[threadIdx.y][e] * tile_b[e][threadIdx.x];
    __syncthreads();
  }
  if (row < m && col < n) {
    float* out = c + size_t(row) * n + col;
    *out = beta == 0.f ? alpha * dot : alpha * dot + beta * *out;
  }
}
}  // namespace

extern "C" void sgemm(int m, int n, int k, float alpha, const float* d_a, const float* d_b, float beta,
                      float* d_c, cudaStream_t stream) {
  const dim3 grid((n + tile - 1) / tile, (m + tile - 1) / tile);
  tiled_unguarded_loads_kernel<<<grid, dim3(tile, tile), 0, stream>>>(m, n, k, alpha, d_a, d_b, beta, d_c);
}
