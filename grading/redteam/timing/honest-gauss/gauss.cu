// The chapter's two-GPU elimination, handed in honestly: the kit's calibration copy of "the
// chapter's technique done right" (grading/policy/chapter/12-gauss-multi-gpu/). The rows of
// [A | b] are dealt out cyclically over the GPUs, each stored transposed; at each pivot step the
// owner of row k sends it to the other GPUs with cudaMemcpyPeerAsync, and every GPU runs the
// chapter's multiplier and row-elimination kernels on its own rows, its stream waiting on the
// owner's event; GPU 0 substitutes back. With gpus = 1 every row stays on GPU 0.
// The honest twin of fingerprint-cache-gauss, which wraps this same code in a cache: what it
// earns is what that entry may earn with every defence on.
#include "gauss.h"

#include <algorithm>

namespace {

constexpr int threads_per_block = 256;
constexpr int transpose_tile = 32;
constexpr int max_gpus = 8;

int blocks_for(int count) { return (count + threads_per_block - 1) / threads_per_block; }

// Row i of [A | b] lives on GPU i % gpus, as local row i / gpus.
int owner(int row, int gpus) { return row % gpus; }
int rows_on(int gpu, int n, int gpus) { return gpu < n ? (n - gpu + gpus - 1) / gpus : 0; }
// The first local row of `gpu` whose global row is below k.
int first_row_below(int k, int gpu, int gpus) { return k >= gpu ? (k - gpu) / gpus + 1 : 0; }

// local[c * m + lr] = A[r][c] for c < n, local[n * m + lr] = b[r], with r = lr * gpus + gpu:
// this GPU's rows of [A | b], stored by columns.
__global__ void gather_rows_transposed_kernel(const float* a, const float* b, float* local, int n, int m, int gpus,
                                              int gpu) {
  __shared__ float tile[transpose_tile][transpose_tile + 1];
  const int c = blockIdx.x * transpose_tile + threadIdx.x;
  for (int dy = threadIdx.y; dy < transpose_tile; dy += blockDim.y) {
    const int lr = blockIdx.y * transpose_tile + dy;
    if (lr < m && c < n) tile[dy][threadIdx.x] = a[size_t(lr * gpus + gpu) * n + c];
  }
  __syncthreads();
  const int lr = blockIdx.y * transpose_tile + threadIdx.x;
  for (int dy = threadIdx.y; dy < transpose_tile; dy += blockDim.y) {
    const int col = blockIdx.x * transpose_tile + dy;
    if (lr < m && col < n) local[size_t(col) * m + lr] = tile[threadIdx.x][dy];
  }
  if (blockIdx.x == 0 && threadIdx.y == 0 && lr < m) local[size_t(n) * m + lr] = b[lr * gpus + gpu];
}

// The pivot row k (local row lr of its owner), columns k..n, into row k of U (row-major,
// n + 1 columns): a strided read in this layout, as in the chapter.
__global__ void extract_pivot_row_kernel(const float* local, int m, int lr, float* upper, int n, int k) {
  const int c = k + blockIdx.x * blockDim.x + threadIdx.x;
  if (c <= n) upper[size_t(k) * (n + 1) + c] = local[size_t(c) * m + lr];
}

// With strictly diagonally dominant rows the pivot of step k is row k itself; what is left is
// the multiplier of each of this GPU's rows below it.
__global__ void find_multipliers_kernel(const float* local, int m, int first, const float* upper, float* multipliers,
                                        int n, int k) {
  const int lr = first + blockIdx.x * blockDim.x + threadIdx.x;
  if (lr < m) multipliers[lr] = local[size_t(k) * m + lr] / upper[size_t(k) * (n + 1) + k];
}

// Each of this GPU's rows below k loses multiplier x pivot row, in columns k+1..n (b
// included). One thread per element; threads of a block walk down one column.
__global__ void row_elimination_kernel(float* local, int m, int first, const float* multipliers, const float* upper,
                                       int n, int k) {
  const int lr = first + blockIdx.x * blockDim.x + threadIdx.x;
  const int c = k + 1 + blockIdx.y;
  if (lr < m) local[size_t(c) * m + lr] -= multipliers[lr] * upper[size_t(k) * (n + 1) + c];
}

// Unknown k from the upper triangle (row-major, b in column n); then every row above k
// subtracts its share of it.
__global__ void back_substitution_step_kernel(float* upper, float* x, int n, int k) {
  const size_t pitch = size_t(n) + 1;
  const float xk = upper[size_t(k) * pitch + n] / upper[size_t(k) * pitch + k];
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r == 0) x[k] = xk;
  if (r < k) upper[size_t(r) * pitch + n] -= upper[size_t(r) * pitch + k] * xk;
}

// What each GPU keeps between calls: its stream and event, and buffers that grow with n.
struct Gpu {
  cudaStream_t stream = nullptr;
  cudaEvent_t pivot_sent = nullptr;  // recorded after this GPU sent its pivot row
  float* local = nullptr;            // its rows of [A | b], by columns
  float* upper = nullptr;            // U, row k written at step k (n + 1 columns)
  float* multipliers = nullptr;
  float* staging = nullptr;          // a copy of A and b, for GPUs other than 0
  size_t local_size = 0, upper_size = 0, multipliers_size = 0, staging_size = 0;
};

Gpu gpu_state[max_gpus];
cudaEvent_t caller_work = nullptr;  // on device 0: what the caller queued on `stream`

void ensure(float*& buffer, size_t& size, size_t elements) {
  if (size >= elements) return;
  if (buffer != nullptr) cudaFree(buffer);
  cudaMalloc(&buffer, elements * sizeof(float));
  size = elements;
}

// Streams, events and peer access, once per GPU (and per pair).
void prepare_gpus(int gpus) {
  static int prepared = 0;
  if (caller_work == nullptr) {
    cudaSetDevice(0);
    cudaEventCreateWithFlags(&caller_work, cudaEventDisableTiming);
  }
  for (int g = prepared; g < gpus; ++g) {
    cudaSetDevice(g);
    cudaStreamCreateWithFlags(&gpu_state[g].stream, cudaStreamNonBlocking);
    cudaEventCreateWithFlags(&gpu_state[g].pivot_sent, cudaEventDisableTiming);
  }
  for (int g = 0; g < gpus; ++g) {
    cudaSetDevice(g);
    for (int h = 0; h < gpus; ++h) {
      if (h == g || (g < prepared && h < prepared)) continue;
      int can_access = 0;
      cudaDeviceCanAccessPeer(&can_access, g, h);
      if (can_access && cudaDeviceEnablePeerAccess(h, 0) != cudaSuccess) (void)cudaGetLastError();
    }
  }
  prepared = std::max(prepared, gpus);
}

}  // namespace

extern "C" void gauss_solve(const float* d_a, const float* d_b, float* d_x, int n, int gpus, cudaStream_t stream) {
  if (n <= 0) return;
  gpus = std::min(std::min(gpus, n), max_gpus);  // every GPU used owns at least one row
  if (gpus < 1) gpus = 1;
  prepare_gpus(gpus);
  const size_t pitch = size_t(n) + 1;

  // Fork: every GPU's stream after the caller's work on `stream` (device 0).
  cudaSetDevice(0);
  cudaEventRecord(caller_work, stream);

  // Each GPU takes its rows of [A | b], transposed.
  for (int g = 0; g < gpus; ++g) {
    Gpu& s = gpu_state[g];
    const int m = rows_on(g, n, gpus);
    cudaSetDevice(g);
    cudaStreamWaitEvent(s.stream, caller_work, 0);
    ensure(s.local, s.local_size, pitch * m);
    ensure(s.upper, s.upper_size, pitch * n);
    ensure(s.multipliers, s.multipliers_size, size_t(m));
    const float* a = d_a;
    const float* b = d_b;
    if (g != 0) {  // a copy of A and b on this GPU, from device 0
      ensure(s.staging, s.staging_size, size_t(n) * n + n);
      cudaMemcpyPeerAsync(s.staging, g, d_a, 0, size_t(n) * n * sizeof(float), s.stream);
      cudaMemcpyPeerAsync(s.staging + size_t(n) * n, g, d_b, 0, size_t(n) * sizeof(float), s.stream);
      a = s.staging;
      b = s.staging + size_t(n) * n;
    }
    const dim3 tiles((n + transpose_tile - 1) / transpose_tile, (m + transpose_tile - 1) / transpose_tile);
    gather_rows_transposed_kernel<<<tiles, dim3(transpose_tile, 8), 0, s.stream>>>(a, b, s.local, n, m, gpus, g);
  }

  for (int k = 0; k < n; ++k) {
    // The owner has finished row k (its stream applied every earlier step): send it.
    const int o = owner(k, gpus);
    Gpu& from = gpu_state[o];
    cudaSetDevice(o);
    extract_pivot_row_kernel<<<blocks_for(n + 1 - k), threads_per_block, 0, from.stream>>>(
        from.local, rows_on(o, n, gpus), k / gpus, from.upper, n, k);
    if (gpus > 1) {
      for (int g = 0; g < gpus; ++g)
        if (g != o)
          cudaMemcpyPeerAsync(gpu_state[g].upper + size_t(k) * pitch + k, g, from.upper + size_t(k) * pitch + k, o,
                              (pitch - k) * sizeof(float), from.stream);
      cudaEventRecord(from.pivot_sent, from.stream);
    }

    // Every GPU: wait for row k if another GPU sent it, then eliminate its own rows below k.
    for (int g = 0; g < gpus; ++g) {
      Gpu& s = gpu_state[g];
      cudaSetDevice(g);
      if (g != o) cudaStreamWaitEvent(s.stream, from.pivot_sent, 0);
      const int m = rows_on(g, n, gpus);
      const int first = first_row_below(k, g, gpus);
      const int rows_below = m - first;
      if (rows_below <= 0 || k == n - 1) continue;
      find_multipliers_kernel<<<blocks_for(rows_below), threads_per_block, 0, s.stream>>>(s.local, m, first, s.upper,
                                                                                           s.multipliers, n, k);
      row_elimination_kernel<<<dim3(blocks_for(rows_below), n - k), threads_per_block, 0, s.stream>>>(
          s.local, m, first, s.multipliers, s.upper, n, k);
    }
  }

  // GPU 0 has every row of U (its own, and the others' by peer copy, waited for above).
  Gpu& gpu0 = gpu_state[0];
  cudaSetDevice(0);
  for (int k = n - 1; k >= 0; --k)
    back_substitution_step_kernel<<<blocks_for(k > 0 ? k : 1), threads_per_block, 0, gpu0.stream>>>(gpu0.upper, d_x,
                                                                                                    n, k);
  // Join: `stream` after the solve, so a caller that synchronises it alone is safe.
  cudaEventRecord(gpu0.pivot_sent, gpu0.stream);
  cudaStreamWaitEvent(stream, gpu0.pivot_sent, 0);
}
