// Lab 12 starter: the chapter's single-GPU Gaussian elimination. It is correct, and it
// ignores `gpus`: every row lives on device 0, so a second GPU sits idle. The README
// explains how to split the rows over the GPUs and why a blocked update is needed as well.
//
// As in the chapter, the augmented matrix [A | b] is stored transposed (by columns): the
// multiplier search reads one column, and the row elimination's threads walk down columns,
// so both are coalesced; only the pivot-row extraction is strided. Each pivot step k runs
// the chapter's three kernels, and the back substitution one kernel per unknown.
#include "gauss.h"

namespace {

constexpr int threads_per_block = 256;
constexpr int transpose_tile = 32;

int blocks_for(int count) { return (count + threads_per_block - 1) / threads_per_block; }

// abt[c * n + r] = A[r][c] for c < n, and abt[n * n + r] = b[r]: column c of [A | b].
__global__ void transpose_into_augmented_kernel(const float* a, const float* b, float* abt, int n) {
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

// The chapter searches for a row with a nonzero pivot. With strictly diagonally dominant
// rows the diagonal never vanishes, so the pivot row of step k is row k itself; what is
// left is each lower row's multiplier.
__global__ void find_pivot_row_and_multipliers_kernel(const float* abt, float* multipliers, int n, int k) {
  const int r = k + 1 + blockIdx.x * blockDim.x + threadIdx.x;
  if (r < n) multipliers[r] = abt[size_t(k) * n + r] / abt[size_t(k) * n + k];
}

// The pivot row k, columns k..n: a strided read in this layout.
__global__ void extract_pivot_row_kernel(const float* abt, float* pivot_row, int n, int k) {
  const int c = k + blockIdx.x * blockDim.x + threadIdx.x;
  if (c <= n) pivot_row[c] = abt[size_t(c) * n + k];
}

// Every row below k loses multiplier x pivot row, in columns k+1..n (b included). One
// thread per element; threads of a block walk down one column.
__global__ void row_elimination_kernel(float* abt, const float* multipliers, const float* pivot_row, int n, int k) {
  const int r = k + 1 + blockIdx.x * blockDim.x + threadIdx.x;
  const int c = k + 1 + blockIdx.y;
  if (r < n) abt[size_t(c) * n + r] -= multipliers[r] * pivot_row[c];
}

// Unknown k from the upper triangle; then every row above k subtracts its share of it.
__global__ void back_substitution_step_kernel(float* abt, float* x, int n, int k) {
  const float xk = abt[size_t(n) * n + k] / abt[size_t(k) * n + k];
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r == 0) x[k] = xk;
  if (r < k) abt[size_t(n) * n + r] -= abt[size_t(k) * n + r] * xk;
}

}  // namespace

extern "C" void gauss_solve(const float* d_a, const float* d_b, float* d_x, int n, int gpus, cudaStream_t stream) {
  (void)gpus;  // the chapter's version uses one GPU: device 0
  if (n <= 0) return;
  float* abt = nullptr;
  float* multipliers = nullptr;
  float* pivot_row = nullptr;
  cudaMallocAsync(&abt, size_t(n + 1) * n * sizeof(float), stream);
  cudaMallocAsync(&multipliers, size_t(n) * sizeof(float), stream);
  cudaMallocAsync(&pivot_row, size_t(n + 1) * sizeof(float), stream);

  const dim3 tiles((n + transpose_tile - 1) / transpose_tile, (n + transpose_tile - 1) / transpose_tile);
  transpose_into_augmented_kernel<<<tiles, dim3(transpose_tile, 8), 0, stream>>>(d_a, d_b, abt, n);

  for (int k = 0; k < n; ++k) {
    const int rows_below = n - k - 1;
    if (rows_below == 0) break;
    find_pivot_row_and_multipliers_kernel<<<blocks_for(rows_below), threads_per_block, 0, stream>>>(abt, multipliers, n, k);
    extract_pivot_row_kernel<<<blocks_for(n + 1 - k), threads_per_block, 0, stream>>>(abt, pivot_row, n, k);
    row_elimination_kernel<<<dim3(blocks_for(rows_below), n - k), threads_per_block, 0, stream>>>(abt, multipliers,
                                                                                                  pivot_row, n, k);
  }
  for (int k = n - 1; k >= 0; --k)
    back_substitution_step_kernel<<<blocks_for(k > 0 ? k : 1), threads_per_block, 0, stream>>>(abt, d_x, n, k);

  cudaFreeAsync(pivot_row, stream);
  cudaFreeAsync(multipliers, stream);
  cudaFreeAsync(abt, stream);
}
