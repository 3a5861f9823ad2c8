// The chapter's single-GPU Gaussian elimination (the lab's starter, as the kit keeps it):
// [A | b] stored by columns, and per pivot the chapter's three kernels (multipliers, pivot-row
// extraction, row elimination), then one kernel per unknown for the back substitution. It is
// the yardstick of "the work is split over the GPUs": the benchmark (bench_gauss.cu) prints it
// beside the reference, and the checks (test_gauss.cu) time a 2-GPU call against it.
#pragma once

#include <labkit/buffer.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>

namespace chapter_gauss {

constexpr int threads_per_block = 256;
constexpr int transpose_tile = 32;

inline int blocks_for(int count) { return (count + threads_per_block - 1) / threads_per_block; }

// abt[c * n + r] = A[r][c] for c < n, and abt[n * n + r] = b[r]: column c of [A | b].
__global__ void transpose_kernel(const float* a, const float* b, float* abt, int n) {
  __shared__ float tile[transpose_tile][transpose_tile + 1];
  const int c = blockIdx.x * transpose_tile + threadIdx.x;
  for (int dy = threadIdx.y; dy < transpose_tile; dy += blockDim.y) {
    const int r = blockIdx.y * transpose_tile + dy;
    if (r < n && c < n) tile[dy][threadIdx.x] = a[size_t(r) * n + c];
  }
  __syncthreads();
  const int r = blockIdx.y * transpose_tile + threadIdx.x;
  for (int dy = threadIdx.y; dy < transpose_tile; dy += blockDim.y) {
    const int col = blockIdx.x * transpose_tile + dy;
    if (r < n && col < n) abt[size_t(col) * n + r] = tile[threadIdx.x][dy];
  }
  if (blockIdx.x == 0 && threadIdx.y == 0 && r < n) abt[size_t(n) * n + r] = b[r];
}

__global__ void multipliers_kernel(const float* abt, float* multipliers, int n, int k) {
  const int r = k + 1 + blockIdx.x * blockDim.x + threadIdx.x;
  if (r < n) multipliers[r] = abt[size_t(k) * n + r] / abt[size_t(k) * n + k];
}

__global__ void extract_pivot_row_kernel(const float* abt, float* pivot_row, int n, int k) {
  const int c = k + blockIdx.x * blockDim.x + threadIdx.x;
  if (c <= n) pivot_row[c] = abt[size_t(c) * n + k];
}

__global__ void row_elimination_kernel(float* abt, const float* multipliers, const float* pivot_row, int n, int k) {
  const int r = k + 1 + blockIdx.x * blockDim.x + threadIdx.x;
  const int c = k + 1 + blockIdx.y;
  if (r < n) abt[size_t(c) * n + r] -= multipliers[r] * pivot_row[c];
}

__global__ void back_substitution_kernel(float* abt, float* x, int n, int k) {
  const float xk = abt[size_t(n) * n + k] / abt[size_t(k) * n + k];
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r == 0) x[k] = xk;
  if (r < k) abt[size_t(n) * n + r] -= abt[size_t(k) * n + r] * xk;
}

// Solves on the current device, in its own scratch (made once, for systems of order n).
class OneGpuSolver {
public:
  explicit OneGpuSolver(int n) : abt_(size_t(n + 1) * n), multipliers_(n), pivot_row_(n + 1) {}

  void operator()(const float* a, const float* b, float* x, int n, cudaStream_t stream) {
    const dim3 tiles((n + transpose_tile - 1) / transpose_tile, (n + transpose_tile - 1) / transpose_tile);
    transpose_kernel<<<tiles, dim3(transpose_tile, 8), 0, stream>>>(a, b, abt_.data(), n);
    for (int k = 0; k + 1 < n; ++k) {
      const int rows_below = n - k - 1;
      multipliers_kernel<<<blocks_for(rows_below), threads_per_block, 0, stream>>>(abt_.data(), multipliers_.data(), n,
                                                                                   k);
      extract_pivot_row_kernel<<<blocks_for(n + 1 - k), threads_per_block, 0, stream>>>(abt_.data(),
                                                                                         pivot_row_.data(), n, k);
      row_elimination_kernel<<<dim3(blocks_for(rows_below), n - k), threads_per_block, 0, stream>>>(
          abt_.data(), multipliers_.data(), pivot_row_.data(), n, k);
    }
    for (int k = n - 1; k >= 0; --k)
      back_substitution_kernel<<<blocks_for(std::max(k, 1)), threads_per_block, 0, stream>>>(abt_.data(), x, n, k);
  }

private:
  labkit::DeviceBuffer<float> abt_, multipliers_, pivot_row_;
};

}  // namespace chapter_gauss
