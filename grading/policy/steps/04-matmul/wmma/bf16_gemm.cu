// Policy step for lab 04: part 1's coalesced mapping (the coalesced step's sgemm.cu) and, in
// part 2, the README's first tensor-core step: WMMA.
//
// The starter's part 2 multiplies BF16 with FP32 FMAs on the CUDA cores. Here each warp holds
// 2 x 4 accumulator fragments of 16x16 (nvcuda::wmma, FP32) for a 32x64 slice of a 128x128
// block tile; per k-tile of 32 the block copies A's 128x32 and B's 32x128 into shared memory
// as BF16, 16 bytes a load (zeros past the matrix's edge), and each warp loads its A and B fragments from there
// (row-major both, A's leading dimension the tile's depth, B's the tile's width) and issues
// wmma::mma_sync. The accumulators go out through a 16x16 staging tile per warp in shared
// memory, so the last partial tiles are stored element by element, and alpha and beta are
// applied there. No ldmatrix of its own, no cp.async, no pipeline: one copy, one barrier, the
// MMAs, one barrier, per k-tile.
//
// Why it is a step: it is the README's part 2, step 1, short of mma.sync with ldmatrix and a
// multi-stage cp.async pipeline (the reference). With part 1 at the coalesced step it must
// earn more than the coalesced step and at most the chapter tier.
#include "sgemm.h"

#include <mma.h>

namespace {

constexpr int block_rows = 128, block_cols = 128, tile_depth = 32;
constexpr int warp_rows = 32, warp_cols = 64;  // 8 warps: 4 down, 2 across
constexpr int warps_across = block_cols / warp_cols;
constexpr int threads = (block_rows / warp_rows) * warps_across * 32;
constexpr int fragment = 16;
constexpr int a_stride = tile_depth + 8;  // padded rows: fewer bank conflicts in load_matrix_sync
constexpr int b_stride = block_cols + 8;

// Copies rows [row0, row0 + rows) and columns [col0, col0 + cols) of the row-major matrix
// `source` (rows x columns) into `tile` (row stride `stride`), zeros past the matrix's edge.
// Eight values (16 bytes) a load where the whole chunk is inside the matrix and its rows are
// 16-byte aligned, one at a time elsewhere: WMMA reads shared memory, so how the tile gets
// there is plain CUDA, and 2-byte loads would leave the tensor cores waiting.
__device__ void copy_tile(__nv_bfloat16* tile, int stride, const __nv_bfloat16* source, int rows_total,
                          int columns, int row0, int col0, int rows, int cols) {
  constexpr int chunk = 8;
  const bool aligned_rows = columns % chunk == 0;
  const __nv_bfloat16 zero = __float2bfloat16(0.f);
  for (int e = threadIdx.x; e < rows * cols / chunk; e += threads) {
    const int r = e / (cols / chunk), col = e % (cols / chunk) * chunk;
    const int gr = row0 + r, gc = col0 + col;
    __nv_bfloat16* into = tile + r * stride + col;
    if (aligned_rows && gr < rows_total && gc + chunk <= columns) {
      *reinterpret_cast<uint4*>(into) = *reinterpret_cast<const uint4*>(source + size_t(gr) * columns + gc);
      continue;
    }
    for (int i = 0; i < chunk; ++i)
      into[i] = gr < rows_total && gc + i < columns ? source[size_t(gr) * columns + gc + i] : zero;
  }
}

__global__ void __launch_bounds__(threads) bf16_gemm_wmma_kernel(int m, int n, int k, float alpha,
                                                                 const __nv_bfloat16* a, const __nv_bfloat16* b,
                                                                 float beta, float* c) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  using namespace nvcuda;
  __shared__ __align__(32) __nv_bfloat16 tile_a[block_rows * a_stride];
  __shared__ __align__(32) __nv_bfloat16 tile_b[tile_depth * b_stride];
  __shared__ __align__(32) float staging[threads / 32][fragment * fragment];

  const int row0 = blockIdx.y * block_rows, col0 = blockIdx.x * block_cols;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int warp_row = warp / warps_across * warp_rows, warp_col = warp % warps_across * warp_cols;

  wmma::fragment<wmma::accumulator, fragment, fragment, fragment, float> acc[warp_rows / fragment]
                                                                             [warp_cols / fragment];
#pragma unroll
  for (auto& row : acc)
#pragma unroll
    for (auto& f : row) wmma::fill_fragment(f, 0.f);

  for (int k0 = 0; k0 < k; k0 += tile_depth) {
    copy_tile(tile_a, a_stride, a, m, k, row0, k0, block_rows, tile_depth);
    copy_tile(tile_b, b_stride, b, k, n, k0, col0, tile_depth, block_cols);
    __syncthreads();
    for (int kk = 0; kk < tile_depth; kk += fragment) {
      wmma::fragment<wmma::matrix_a, fragment, fragment, fragment, __nv_bfloat16, wmma::row_major>
          a_frag[warp_rows / fragment];
      wmma::fragment<wmma::matrix_b, fragment, fragment, fragment, __nv_bfloat16, wmma::row_major>
          b_frag[warp_cols / fragment];
#pragma unroll
      for (int i = 0; i < warp_rows / fragment; ++i)
        wmma::load_matrix_sync(a_frag[i], tile_a + (warp_row + i * fragment) * a_stride + kk, a_stride);
#pragma unroll
      for (int j = 0; j < warp_cols / fragment; ++j)
        wmma::load_matrix_sync(b_frag[j], tile_b + kk * b_stride + warp_col + j * fragment, b_stride);
#pragma unroll
      for (int i = 0; i < warp_rows / fragment; ++i)
#pragma unroll
        for (int j = 0; j < warp_cols / fragment; ++j) wmma::mma_sync(acc[i][j], a_frag[i], b_frag[j], acc[i][j]);
    }
    __syncthreads();
  }

  // Each fragment through this warp's staging tile: the lanes write its 256 values to C, two
  // rows of 16 at a time, only where the element exists.
#pragma unroll
  for (int i = 0; i < warp_rows / fragment; ++i)
#pragma unroll
    for (int j = 0; j < warp_cols / fragment; ++j) {
      wmma::store_matrix_sync(staging[warp], acc[i][j], fragment, wmma::mem_row_major);
      __syncwarp();
      for (int e = lane; e < fragment * fragment; e += 32) {
        const int r = row0 + warp_row + i * fragment + e / fragment;
        const int col = col0 + warp_col + j * fragment + e % fragment;
        if (r < m && col < n) {
          float* out = c + size_t(r) * n + col;
          const float v = alpha * staging[warp][e];
          *out = beta == 0.f ? v : v + beta * *out;  // C is not read when beta is 0
        }
      }
      __syncwarp();
    }
#endif
}

}  // namespace

extern "C" void bf16_gemm(int m, int n, int k, float alpha, const __nv_bfloat16* d_a, const __nv_bfloat16* d_b,
                          float beta, float* d_c, cudaStream_t stream) {
  const dim3 grid((n + block_cols - 1) / block_cols, (m + block_rows - 1) / block_rows);
  bf16_gemm_wmma_kernel<<<grid, threads, 0, stream>>>(m, n, k, alpha, d_a, d_b, beta, d_c);
}
