// Lab 04 reference solution: warp-tiled SGEMM with a cp.async pipeline, the rung past the
// chapter's register blocking.
//
// Over the chapter's tiled kernel (one output per thread, 32x32 tiles) and the classic
// register-blocked kernel (8x8 outputs per thread, 256 threads, the next tile prefetched
// through registers), it changes four things:
//  1. Warp tiling: each of the block's 4 warps owns a 128x32 slice of its 128x128 tile, and
//     each lane a 16x8 patch of it (4x2 quadrants of 4x4, 32 rows and 16 columns apart). Per
//     k a lane reads 6 float4 from shared memory (LDS.128) and feeds 128 FMAs with them:
//     95.5% of the issued instructions are FFMA (8x8: 94%), and shared memory serves a quarter
//     fewer loads per FMA (6 per 128 against 4 per 64). Each warp read is 8 distinct
//     float4 of A (128 contiguous bytes) or 4 of B, broadcast to the other lanes.
//  2. Global loads go straight to shared memory with cp.async, four stages of depth 8 deep:
//     three tiles are in flight while the fourth is multiplied, with no registers spent on
//     staging (the 16x8 patch needs 128 accumulators; the kernel uses 231 registers, two
//     blocks per SM) and one barrier per tile.
//  3. A is stored transposed (As[k][row]) by 4-byte cp.async, lanes mapped so that 8 lanes
//     read one 32-byte sector of a row of A and the warp's 32 stores hit 32 different banks;
//     B's rows are copied 16 bytes at a time.
//  4. The block grid walks down groups of 8 block rows before moving right, so the blocks
//     resident together share columns of B in L2.
// Shapes whose edges do not fill a tile, or whose rows are not 16-byte aligned, take the same
// kernel with every copy bounds-checked (cp.async's zero fill past the matrix) and checked
// stores. Problems that give fewer 128x128 tiles than there are SMs (1024x2048: 128 tiles for
// 132 SMs) use 64x128 blocks with an 8x8 patch per lane and depth 16 instead.
// Against cublasSgemm in FP32, and the warp shapes, depths and block sizes it beat:
// docs/design/04-matmul.md.
#include "sgemm.h"

#include <cstdint>

namespace {

// One tile configuration. A block of (block_rows/warp_rows) x (block_cols/warp_cols) warps;
// each lane computes a thread_rows x thread_cols patch made of 4x4 quadrants.
template <int BlockRows, int BlockCols, int TileDepth, int WarpRows, int WarpCols, int ThreadRows,
          int ThreadCols, int Stages, int BlocksPerSm, int GroupRows = 8>
struct SgemmTiling {
  static constexpr int block_rows = BlockRows;
  static constexpr int block_cols = BlockCols;
  static constexpr int tile_depth = TileDepth;  // k per shared-memory stage
  static constexpr int warp_rows = WarpRows;
  static constexpr int warp_cols = WarpCols;
  static constexpr int thread_rows = ThreadRows;
  static constexpr int thread_cols = ThreadCols;
  static constexpr int stages = Stages;
  static constexpr int blocks_per_sm = BlocksPerSm;

  static constexpr int warps_down = block_rows / warp_rows;
  static constexpr int warps_across = block_cols / warp_cols;
  static constexpr int threads = warps_down * warps_across * 32;
  static constexpr int lanes_down = warp_rows / thread_rows;     // lanes along a warp's rows
  static constexpr int lanes_across = warp_cols / thread_cols;
  static constexpr int quadrants_down = thread_rows / 4;
  static constexpr int quadrants_across = thread_cols / 4;
  static constexpr int quadrant_row_step = warp_rows / quadrants_down;   // rows between a lane's quadrants
  static constexpr int quadrant_col_step = warp_cols / quadrants_across;
  static constexpr int a_stride = block_rows + 4;  // floats per k in As: = 4 (mod 32) banks
  static constexpr int a_floats = tile_depth * a_stride;
  static constexpr int b_floats = tile_depth * block_cols;
  static constexpr int stage_floats = a_floats + b_floats;
  static constexpr int smem_bytes = stages * stage_floats * int(sizeof(float));
  static constexpr int group_rows = GroupRows;  // block rows launched together, for L2 reuse of B

  static_assert(lanes_down * lanes_across == 32, "a warp's lanes must tile its patch exactly");
  static_assert(thread_rows % 4 == 0 && thread_cols % 4 == 0, "a lane's patch is made of 4x4 quadrants");
  static_assert(block_rows % warp_rows == 0 && block_cols % warp_cols == 0, "warps must tile the block");
  static_assert(block_rows % 32 == 0, "As rows of block_rows + 4 floats keep the transposed stores conflict-free");
  static_assert(tile_depth % 8 == 0, "A is copied in runs of 8 floats (one 32-byte sector) along k");
  static_assert((block_rows * tile_depth) % threads == 0, "every thread copies as many floats of A");
  static_assert((block_cols * tile_depth / 4) % threads == 0, "every thread copies as many float4 of B");
  static_assert(tile_depth * block_cols % threads == 0, "checked copies of B: as many floats per thread");
  static_assert(stages >= 2, "a pipeline needs a stage to fill while another is read");
};

// 4096^3 and other large problems: 128 threads, 16x8 per lane in 128x32 warp slices, two
// blocks per SM. Depth 8 and four stages: depth 16 needs 16 copies of A per thread and
// spills at 255 registers; 3 or 6 stages measured 1.5-2% slower.
using LargeTiling = SgemmTiling<128, 128, 8, 128, 32, 16, 8, 4, 2>;
// Problems too small to give every SM two 128x128 tiles: 64x128 blocks of 8x8 per lane.
using SmallTiling = SgemmTiling<64, 128, 16, 32, 64, 8, 8, 3, 3>;

struct Problem {
  int m, n, k;
  float alpha, beta;
  const float* a;
  const float* b;
  float* c;
};

// ---- cp.async ---------------------------------------------------------------------------

// Before sm_80 (Turing, in the portable build) there is no cp.async: the same copies become
// plain loads and stores, finished before the barrier that follows every wait.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#define LABKIT_SGEMM_SYNC_COPIES 1
#else
__device__ __forceinline__ uint32_t shared_address(const void* p) {
  return uint32_t(__cvta_generic_to_shared(p));
}
#endif

// Copies 4 bytes, or writes 0 when `valid` is false (nothing is read then).
__device__ __forceinline__ void copy4_async(float* dst, const float* src, bool valid) {
#ifdef LABKIT_SGEMM_SYNC_COPIES
  *dst = valid ? *src : 0.f;
#else
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(shared_address(dst)), "l"(src),
               "r"(valid ? 4 : 0));
#endif
}

__device__ __forceinline__ void copy16_async(float* dst, const float* src) {
#ifdef LABKIT_SGEMM_SYNC_COPIES
  *reinterpret_cast<float4*>(dst) = *reinterpret_cast<const float4*>(src);
#else
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(shared_address(dst)), "l"(src));
#endif
}

__device__ __forceinline__ void commit_copies() {
#ifndef LABKIT_SGEMM_SYNC_COPIES
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}

template <int Pending>
__device__ __forceinline__ void wait_copies() {
#ifndef LABKIT_SGEMM_SYNC_COPIES
  asm volatile("cp.async.wait_group %0;\n" ::"n"(Pending));
#endif
}

// ---- the kernel -------------------------------------------------------------------------

// The tile this block computes. Consecutive blocks walk down a group of `group_rows` block
// rows before moving right, so blocks running at the same time share columns of B in L2.
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

// Starts the copy of the k-tile at k0 into one stage. A goes in transposed: float e of this
// thread is row (e / 8) % block_rows, k (e % 8) + 8 * (e / (8 * block_rows)), so 8 lanes read
// one 32-byte run of a row and the warp's 32 stores hit 32 banks (a_stride = 4 mod 32).
template <class T, bool checked>
__device__ __forceinline__ void copy_tile(const Problem& p, int2 origin, int k0, float* as, float* bs) {
  constexpr int a_per_thread = T::block_rows * T::tile_depth / T::threads;
#pragma unroll
  for (int l = 0; l < a_per_thread; ++l) {
    const int e = threadIdx.x + l * T::threads;
    const int row = (e / 8) % T::block_rows;
    const int kk = e % 8 + 8 * (e / (8 * T::block_rows));
    const int global_row = origin.x + row, global_k = k0 + kk;
    const bool valid = !checked || (global_row < p.m && global_k < p.k);
    const float* src = valid ? p.a + size_t(global_row) * p.k + global_k : p.a;
    copy4_async(as + kk * T::a_stride + row, src, valid);
  }
  if constexpr (!checked) {
    constexpr int vectors_per_row = T::block_cols / 4;
    constexpr int b_per_thread = T::tile_depth * vectors_per_row / T::threads;
#pragma unroll
    for (int l = 0; l < b_per_thread; ++l) {
      const int v = threadIdx.x + l * T::threads;
      const int kk = v / vectors_per_row, col = v % vectors_per_row * 4;
      copy16_async(bs + kk * T::block_cols + col, p.b + size_t(k0 + kk) * p.n + origin.y + col);
    }
  } else {
    constexpr int b_per_thread = T::tile_depth * T::block_cols / T::threads;
#pragma unroll
    for (int l = 0; l < b_per_thread; ++l) {
      const int e = threadIdx.x + l * T::threads;
      const int kk = e / T::block_cols, col = e % T::block_cols;
      const int global_k = k0 + kk, global_col = origin.y + col;
      const bool valid = global_k < p.k && global_col < p.n;
      copy4_async(bs + kk * T::block_cols + col, valid ? p.b + size_t(global_k) * p.n + global_col : p.b, valid);
    }
  }
}

// Where this lane's patch starts inside the block tile: its warp's slice (128x32, or 32x64
// for the small tiling), then 4 rows and 4 columns per lane, lanes_across lanes along a row.
template <class T>
__device__ __forceinline__ int2 lane_origin() {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int row = (warp / T::warps_across) * T::warp_rows + (lane / T::lanes_across) * 4;
  const int col = (warp % T::warps_across) * T::warp_cols + (lane % T::lanes_across) * 4;
  return make_int2(row, col);
}

// One stage's outer products: per k, thread_rows values of A and thread_cols of B (float4
// reads) feed thread_rows x thread_cols FMAs.
template <class T>
__device__ __forceinline__ void multiply_stage(const float* as, const float* bs, int2 lane,
                                               float (&acc)[T::thread_rows][T::thread_cols]) {
#pragma unroll
  for (int kk = 0; kk < T::tile_depth; ++kk) {
    float a[T::thread_rows], b[T::thread_cols];
#pragma unroll
    for (int q = 0; q < T::quadrants_down; ++q) {
      const float4 v = *reinterpret_cast<const float4*>(as + kk * T::a_stride + lane.x + q * T::quadrant_row_step);
      a[4 * q + 0] = v.x, a[4 * q + 1] = v.y, a[4 * q + 2] = v.z, a[4 * q + 3] = v.w;
    }
#pragma unroll
    for (int q = 0; q < T::quadrants_across; ++q) {
      const float4 v = *reinterpret_cast<const float4*>(bs + kk * T::block_cols + lane.y + q * T::quadrant_col_step);
      b[4 * q + 0] = v.x, b[4 * q + 1] = v.y, b[4 * q + 2] = v.z, b[4 * q + 3] = v.w;
    }
#pragma unroll
    for (int i = 0; i < T::thread_rows; ++i)
#pragma unroll
      for (int j = 0; j < T::thread_cols; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
  }
}

// Writes 4 columns of one row of the lane's patch: C = alpha*acc + beta*C, never reading C
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

template <class T, bool checked>
__global__ void __launch_bounds__(T::threads, T::blocks_per_sm) sgemm_warp_tiled_kernel(Problem p) {
  extern __shared__ float4 shared_vectors[];
  float* shared = reinterpret_cast<float*>(shared_vectors);

  const int2 origin = block_origin<T>();
  const int2 lane = lane_origin<T>();
  float acc[T::thread_rows][T::thread_cols] = {};

  const int tiles = (p.k + T::tile_depth - 1) / T::tile_depth;
  // Fill all stages but one; a commit per stage, empty or not, keeps the group count fixed.
#pragma unroll
  for (int s = 0; s < T::stages - 1; ++s) {
    if (s < tiles)
      copy_tile<T, checked>(p, origin, s * T::tile_depth, shared + s * T::stage_floats,
                            shared + s * T::stage_floats + T::a_floats);
    commit_copies();
  }

  for (int t = 0; t < tiles; ++t) {
    wait_copies<T::stages - 2>();  // tile t has landed (for this thread)...
    __syncthreads();               // ...for every thread, and stage (t - 1) % stages is free
    const int next = t + T::stages - 1;
    if (next < tiles) {
      float* stage = shared + (next % T::stages) * T::stage_floats;
      copy_tile<T, checked>(p, origin, next * T::tile_depth, stage, stage + T::a_floats);
    }
    commit_copies();
    const float* stage = shared + (t % T::stages) * T::stage_floats;
    multiply_stage<T>(stage, stage + T::a_floats, lane, acc);
  }
  wait_copies<0>();  // no copy outlives the block

#pragma unroll
  for (int qi = 0; qi < T::quadrants_down; ++qi)
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int row = origin.x + lane.x + qi * T::quadrant_row_step + r;
#pragma unroll
      for (int qj = 0; qj < T::quadrants_across; ++qj)
        store_vector<checked>(p, row, origin.y + lane.y + qj * T::quadrant_col_step, &acc[4 * qi + r][4 * qj]);
    }
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// The unchecked kernel needs whole tiles and 16-byte aligned rows in B and C (A is copied 4
// bytes at a time either way).
template <class T>
bool fits_whole_tiles(const Problem& p) {
  return p.m % T::block_rows == 0 && p.n % T::block_cols == 0 && p.k % T::tile_depth == 0 && aligned16(p.b) &&
         aligned16(p.c);
}

template <class T, bool checked>
void launch_kernel(const Problem& p, cudaStream_t stream) {
  static const bool configured = [] {  // more than 48 KB of dynamic shared memory needs opting in
    cudaFuncSetAttribute(sgemm_warp_tiled_kernel<T, checked>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                         T::smem_bytes);
    return true;
  }();
  (void)configured;
  const dim3 grid((p.n + T::block_cols - 1) / T::block_cols, (p.m + T::block_rows - 1) / T::block_rows);
  sgemm_warp_tiled_kernel<T, checked><<<grid, T::threads, T::smem_bytes, stream>>>(p);
}

template <class T>
void launch_sgemm(const Problem& p, cudaStream_t stream) {
  if (fits_whole_tiles<T>(p))
    launch_kernel<T, false>(p, stream);
  else
    launch_kernel<T, true>(p, stream);
}

int sm_count() {
  static const int count = [] {
    int device = 0, sms = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    return sms > 0 ? sms : 1;
  }();
  return count;
}

// Large tiles when they give every SM at least one block, else the small ones: at 1024x2048
// the large tiles make 128 blocks for 132 SMs and lose to the small ones' 256
// (docs/design/04-matmul.md, "Tiles that fit the problem").
bool wants_large_tiles(const Problem& p) {
  const long long blocks = (long long)((p.m + LargeTiling::block_rows - 1) / LargeTiling::block_rows) *
                           ((p.n + LargeTiling::block_cols - 1) / LargeTiling::block_cols);
  return blocks >= sm_count();
}

}  // namespace

extern "C" void sgemm(int m, int n, int k, float alpha, const float* d_a, const float* d_b, float beta,
                      float* d_c, cudaStream_t stream) {
  if (m <= 0 || n <= 0) return;
  const Problem p{m, n, k, alpha, beta, d_a, d_b, d_c};
  if (wants_large_tiles(p))
    launch_sgemm<LargeTiling>(p, stream);
  else
    launch_sgemm<SmallTiling>(p, stream);
}
