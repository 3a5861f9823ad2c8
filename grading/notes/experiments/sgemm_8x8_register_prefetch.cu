// Lab 04 reference solution: register-blocked SGEMM, the third rung of the ladder.
//
// Over the chapter's tiled kernel (one output per thread, 32x32 tiles) it changes four things:
//  1. Register blocking: each thread computes an 8x8 patch of C, so every value it reads from
//     shared memory feeds 8 FMAs instead of 1. The chapter's kernel is bound by shared-memory
//     loads (two per FMA); this one issues one 16-byte load per 16 FMAs.
//  2. A is stored transposed in shared memory (As[k][row]), so a thread's 4 consecutive rows of
//     A are one LDS.128, like its 4 consecutive columns of B.
//  3. Global loads are float4 (LDG.128), and the next tile is fetched into registers while the
//     current one is multiplied out of a second shared-memory buffer: one barrier per tile and
//     the load latency hidden behind 512 FMAs per thread.
//  4. A thread's 8x8 patch is four 4x4 quadrants 64 rows/columns apart, and the lanes of a warp
//     cover a 4x8 grid of threads, so a warp's shared-memory reads are broadcasts or 128
//     contiguous bytes: no bank conflicts.
// Shapes that are not multiples of the block tile (or rows that are not 16-byte aligned) take
// the same kernel with bounds-checked scalar loads and stores.
#include "sgemm.h"

#include <cstdint>

namespace {

struct SgemmTuning {
  static constexpr int block_rows = 128;  // rows of C per block
  static constexpr int block_cols = 128;  // columns of C per block
  static constexpr int tile_depth = 8;    // k per tile: 16 measured 1.5% faster on H100 but spills
  static constexpr int threads_per_block = 256;
  static constexpr int blocks_per_sm = 2;  // caps registers at 128 per thread
  static constexpr int group_rows = 8;     // block rows launched together, for L2 reuse of B
  // H100, 4096^3: 40.4 TFLOP/s, 79.3% of cublasSgemm FP32 (group_rows 1: 78.7%)
};

constexpr int quadrant = 4;       // a thread's patch is 2x2 quadrants of 4x4
constexpr int thread_rows = 8;    // 2 quadrants
constexpr int thread_cols = 8;
constexpr int a_padding = 4;      // keeps the transposed stores of A free of bank conflicts

template <class T>
struct Layout {
  static constexpr int threads_across = T::block_cols / thread_cols;  // 16
  static constexpr int threads_down = T::block_rows / thread_rows;    // 16
  static constexpr int a_stride = T::block_rows + a_padding;          // floats per row of As
  static constexpr int a_vectors = T::block_rows * T::tile_depth / 4;
  static constexpr int b_vectors = T::tile_depth * T::block_cols / 4;
  static constexpr int a_loads = a_vectors / T::threads_per_block;    // float4 per thread
  static constexpr int b_loads = b_vectors / T::threads_per_block;
  static_assert(threads_across * threads_down == T::threads_per_block,
                "one thread per 8x8 patch of the block tile");
  static_assert(a_vectors % T::threads_per_block == 0 && b_vectors % T::threads_per_block == 0,
                "every thread loads the same number of float4 of each tile");
  static_assert(T::tile_depth % 4 == 0, "rows of the A tile are read as float4");
  static_assert(T::block_rows == 2 * quadrant * threads_down && T::block_cols == 2 * quadrant * threads_across,
                "a thread's two quadrants sit half a block tile apart");
};

struct Problem {
  int m, n, k;
  float alpha, beta;
  const float* a;
  const float* b;
  float* c;
};

// The tile this block computes. Consecutive blocks walk down a group of `group_rows` block rows
// before moving right, so blocks running at the same time share columns of B in L2.
template <class T>
__device__ __forceinline__ int2 block_origin() {
  const int tiles_down = gridDim.y;
  const int block = blockIdx.y * gridDim.x + blockIdx.x;
  const int blocks_per_group = T::group_rows * gridDim.x;
  const int first_row = block / blocks_per_group * T::group_rows;
  const int rows_in_group = min(tiles_down - first_row, T::group_rows);
  const int tile_row = first_row + (block % blocks_per_group) % rows_in_group;
  const int tile_col = (block % blocks_per_group) / rows_in_group;
  return make_int2(tile_row * T::block_rows, tile_col * T::block_cols);
}

// One float4 of A (4 consecutive k of one row) or of B (4 consecutive columns of one k), with
// zeros past the matrix's edge when `checked`.
template <bool checked>
__device__ __forceinline__ float4 load_vector(const float* matrix, int rows, int cols, int row, int col) {
  const float* p = matrix + size_t(row) * cols + col;
  if constexpr (!checked) {
    return *reinterpret_cast<const float4*>(p);
  } else {
    float v[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) v[j] = (row < rows && col + j < cols) ? p[j] : 0.f;
    return make_float4(v[0], v[1], v[2], v[3]);
  }
}

template <class T>
struct TileRegisters {
  float4 a[Layout<T>::a_loads];
  float4 b[Layout<T>::b_loads];
};

template <class T, bool checked>
__device__ __forceinline__ void load_tile(const Problem& p, int2 origin, int k0, TileRegisters<T>& r) {
  constexpr int a_vectors_per_row = T::tile_depth / 4;
  constexpr int b_vectors_per_row = T::block_cols / 4;
#pragma unroll
  for (int l = 0; l < Layout<T>::a_loads; ++l) {
    const int v = threadIdx.x + l * T::threads_per_block;
    r.a[l] = load_vector<checked>(p.a, p.m, p.k, origin.x + v / a_vectors_per_row,
                                  k0 + v % a_vectors_per_row * 4);
  }
#pragma unroll
  for (int l = 0; l < Layout<T>::b_loads; ++l) {
    const int v = threadIdx.x + l * T::threads_per_block;
    r.b[l] = load_vector<checked>(p.b, p.k, p.n, k0 + v / b_vectors_per_row,
                                  origin.y + v % b_vectors_per_row * 4);
  }
}

template <class T>
__device__ __forceinline__ void store_tile(const TileRegisters<T>& r, float* as, float* bs) {
  constexpr int a_vectors_per_row = T::tile_depth / 4;
  constexpr int b_vectors_per_row = T::block_cols / 4;
#pragma unroll
  for (int l = 0; l < Layout<T>::a_loads; ++l) {
    const int v = threadIdx.x + l * T::threads_per_block;
    float* column = as + (v % a_vectors_per_row * 4) * Layout<T>::a_stride + v / a_vectors_per_row;
    column[0 * Layout<T>::a_stride] = r.a[l].x;  // transposed: As[k][row]
    column[1 * Layout<T>::a_stride] = r.a[l].y;
    column[2 * Layout<T>::a_stride] = r.a[l].z;
    column[3 * Layout<T>::a_stride] = r.a[l].w;
  }
#pragma unroll
  for (int l = 0; l < Layout<T>::b_loads; ++l) {
    const int v = threadIdx.x + l * T::threads_per_block;
    reinterpret_cast<float4*>(bs + v / b_vectors_per_row * T::block_cols)[v % b_vectors_per_row] = r.b[l];
  }
}

__device__ __forceinline__ void unpack(float4 v, float* out) {
  out[0] = v.x;
  out[1] = v.y;
  out[2] = v.z;
  out[3] = v.w;
}

// The 8x8 outer products of one shared-memory tile: per k, 8 values of A and 8 of B (four
// LDS.128) feed 64 FMAs.
template <class T>
__device__ __forceinline__ void multiply_tile(const float* as, const float* bs, int2 thread_origin,
                                              float (&acc)[thread_rows][thread_cols]) {
  constexpr int half_rows = T::block_rows / 2;
  constexpr int half_cols = T::block_cols / 2;
#pragma unroll
  for (int kk = 0; kk < T::tile_depth; ++kk) {
    const float* a_row = as + kk * Layout<T>::a_stride + thread_origin.x;
    const float* b_row = bs + kk * T::block_cols + thread_origin.y;
    float a[thread_rows], b[thread_cols];
    unpack(*reinterpret_cast<const float4*>(a_row), a);
    unpack(*reinterpret_cast<const float4*>(a_row + half_rows), a + quadrant);
    unpack(*reinterpret_cast<const float4*>(b_row), b);
    unpack(*reinterpret_cast<const float4*>(b_row + half_cols), b + quadrant);
#pragma unroll
    for (int i = 0; i < thread_rows; ++i)
#pragma unroll
      for (int j = 0; j < thread_cols; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
  }
}

// Writes 4 columns of one row of the thread's patch: C = alpha*acc + beta*C, never reading C
// when beta is 0 (it may hold garbage, NaN included).
template <bool checked>
__device__ __forceinline__ void store_vector(const Problem& p, int row, int col, const float* acc) {
  float* out = p.c + size_t(row) * p.n + col;
  if constexpr (!checked) {
    float4 v = make_float4(p.alpha * acc[0], p.alpha * acc[1], p.alpha * acc[2], p.alpha * acc[3]);
    if (p.beta != 0.f) {
      const float4 old = *reinterpret_cast<const float4*>(out);
      v.x = fmaf(p.beta, old.x, v.x);
      v.y = fmaf(p.beta, old.y, v.y);
      v.z = fmaf(p.beta, old.z, v.z);
      v.w = fmaf(p.beta, old.w, v.w);
    }
    *reinterpret_cast<float4*>(out) = v;
  } else {
    if (row >= p.m) return;
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    if (col + j >= p.n) continue;
    const float scaled = p.alpha * acc[j];
    out[j] = p.beta != 0.f ? fmaf(p.beta, out[j], scaled) : scaled;
    }
  }
}

// Warp w covers thread rows 4*(w/2) .. +4 and thread columns 8*(w%2) .. +8, lane-major along
// columns: B reads of a warp are 8 distinct float4 (128 bytes), A reads 4 distinct float4.
__device__ __forceinline__ int2 thread_patch_origin() {
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const int thread_row = (warp / 2) * 4 + lane / 8;
  const int thread_col = (warp % 2) * 8 + lane % 8;
  return make_int2(thread_row * quadrant, thread_col * quadrant);
}

template <class T, bool checked>
__global__ void __launch_bounds__(T::threads_per_block, T::blocks_per_sm)
    sgemm_register_blocked_kernel(Problem p) {
  __shared__ __align__(16) float as[2][T::tile_depth * Layout<T>::a_stride];
  __shared__ __align__(16) float bs[2][T::tile_depth * T::block_cols];

  const int2 origin = block_origin<T>();
  const int2 patch = thread_patch_origin();
  float acc[thread_rows][thread_cols] = {};

  TileRegisters<T> next;
  load_tile<T, checked>(p, origin, 0, next);
  store_tile<T>(next, as[0], bs[0]);
  __syncthreads();

  const int tiles = (p.k + T::tile_depth - 1) / T::tile_depth;
  for (int t = 0; t < tiles; ++t) {
    const int current = t % 2;
    const bool has_next = t + 1 < tiles;
    if (has_next) load_tile<T, checked>(p, origin, (t + 1) * T::tile_depth, next);  // in flight...
    multiply_tile<T>(as[current], bs[current], patch, acc);                          // ...during this
    if (has_next) store_tile<T>(next, as[1 - current], bs[1 - current]);
    __syncthreads();
  }

#pragma unroll
  for (int i = 0; i < thread_rows; ++i) {
    const int row = origin.x + patch.x + (i / quadrant) * (T::block_rows / 2) + i % quadrant;
#pragma unroll
    for (int h = 0; h < 2; ++h)
      store_vector<checked>(p, row, origin.y + patch.y + h * (T::block_cols / 2), &acc[i][h * quadrant]);
  }
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// The unchecked kernel needs whole tiles and 16-byte aligned rows in all three matrices.
template <class T>
bool fits_whole_tiles(const Problem& p) {
  return p.m % T::block_rows == 0 && p.n % T::block_cols == 0 && p.k % T::tile_depth == 0 &&
         aligned16(p.a) && aligned16(p.b) && aligned16(p.c);
}

template <class T>
void launch_sgemm(const Problem& p, cudaStream_t stream) {
  const dim3 grid((p.n + T::block_cols - 1) / T::block_cols, (p.m + T::block_rows - 1) / T::block_rows);
  if (fits_whole_tiles<T>(p))
    sgemm_register_blocked_kernel<T, false><<<grid, T::threads_per_block, 0, stream>>>(p);
  else
    sgemm_register_blocked_kernel<T, true><<<grid, T::threads_per_block, 0, stream>>>(p);
}

}  // namespace

extern "C" void sgemm(int m, int n, int k, float alpha, const float* d_a, const float* d_b, float beta,
                      float* d_c, cudaStream_t stream) {
  if (m <= 0 || n <= 0) return;
  launch_sgemm<SgemmTuning>({m, n, k, alpha, beta, d_a, d_b, d_c}, stream);
}
