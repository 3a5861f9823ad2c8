// Lab 04 part 2 reference solution: BF16 GEMM on the tensor cores with mma.sync, ldmatrix and
// a cp.async pipeline, FP32 accumulators throughout.
//
// Over the WMMA kernel of the README (16x16x16 fragments loaded from shared memory by the
// wmma library), it changes four things:
//  1. The instruction under WMMA, `mma.sync.aligned.m16n8k16`, called directly: each warp owns a
//     64x64 slice of C as 4 x 8 tiles of 16x8, 128 FP32 accumulators per lane, and per k16 step
//     issues 32 MMAs from 4 A fragments and 8 B fragments, so every fragment read from shared
//     memory feeds 4 or 8 MMAs (WMMA's 16x16 tiles with a 2x2 warp tile feed 2).
//  2. Fragments come from shared memory with `ldmatrix` (x4: four 8x8 matrices per instruction;
//     B with .trans, since B is stored k-major and the MMA wants it n-major). Rows of A's tile
//     are padded to 40 BF16 (80 bytes, 5 of the 16-byte units of a 128-byte bank line) and
//     rows of B's to block_cols + 8, an odd number of units too: the 8 rows one 8x8 matrix reads
//     fall on 8 different units, so no ldmatrix has a bank conflict.
//  3. Global memory goes straight to shared memory with 16-byte cp.async in four stages of
//     depth 32: three tiles are in flight while the fourth is multiplied, one barrier per tile.
//     Copies past the matrix's edge use cp.async's zero fill (source size 0), so a ragged
//     m, n or k costs no second kernel while rows stay 16-byte aligned.
//  4. Consecutive blocks walk down a group of 8 block rows before moving right, so the blocks
//     resident together share columns of B in L2.
// Rows that are not 16-byte aligned (k or n not a multiple of 8) take the same kernel with
// each element of A and B loaded on its own and bounds-checked, and C stored one float at a
// time: correct for any shape, and slower. GPUs before sm_80 (no BF16 MMA, no cp.async) take
// a plain FP32 tiled kernel, as would one without room for the small tiles' shared memory.
// Wgmma with TMA (Hopper's warpgroup MMA reading shared memory directly) is the next rung and
// what cuBLAS runs on an H100; the README describes it.
#include "sgemm.h"

#include <cstdint>

namespace {

// One tile configuration: a block of (block_rows / 64) x (block_cols / 64) warps, each warp a
// 64x64 slice of C; tiles of depth 32 along k.
template <int BlockRows, int BlockCols, int Stages, int BlocksPerSm, int GroupRows = 8>
struct Bf16Tiling {
  static constexpr int block_rows = BlockRows;
  static constexpr int block_cols = BlockCols;
  static constexpr int tile_depth = 32;
  static constexpr int warp_rows = 64;
  static constexpr int warp_cols = 64;
  static constexpr int stages = Stages;
  static constexpr int blocks_per_sm = BlocksPerSm;
  static constexpr int group_rows = GroupRows;

  static constexpr int warps_down = block_rows / warp_rows;
  static constexpr int warps_across = block_cols / warp_cols;
  static constexpr int threads = warps_down * warps_across * 32;
  static constexpr int m_tiles = warp_rows / 16;  // MMA tiles of 16 rows per warp
  static constexpr int n_tiles = warp_cols / 8;   // MMA tiles of 8 columns per warp

  // Elements per row in shared memory, padded: an odd number of 16-byte units per row.
  static constexpr int a_stride = tile_depth + 8;
  static constexpr int b_stride = block_cols + 8;
  static constexpr int a_elements = block_rows * a_stride;
  static constexpr int b_elements = tile_depth * b_stride;
  static constexpr int stage_elements = a_elements + b_elements;
  static constexpr int smem_bytes = stages * stage_elements * 2;

  static constexpr int a_vectors_per_row = tile_depth / 8;  // 16-byte vectors of 8 BF16
  static constexpr int b_vectors_per_row = block_cols / 8;
  static constexpr int a_vectors_per_thread = block_rows * a_vectors_per_row / threads;
  static constexpr int b_vectors_per_thread = tile_depth * b_vectors_per_row / threads;

  static_assert(block_rows % warp_rows == 0 && block_cols % warp_cols == 0, "warps must tile the block");
  static_assert((a_stride * 2 / 16) % 2 == 1 && (b_stride * 2 / 16) % 2 == 1,
                "an odd number of 16-byte units per shared row keeps ldmatrix free of bank conflicts");
  static_assert(block_rows * a_vectors_per_row % threads == 0, "every thread copies as many vectors of A");
  static_assert(tile_depth * b_vectors_per_row % threads == 0, "every thread copies as many vectors of B");
  static_assert(tile_depth % 16 == 0, "the MMA's k is 16");
  static_assert(stages >= 2, "a pipeline needs a stage to fill while another is read");
};

// 4096^3 and other large problems: 128x256 blocks of 8 warps, one block per SM (each lane
// holds 128 accumulators).
using LargeTiling = Bf16Tiling<128, 256, 4, 1>;
// Problems that give fewer 128x256 tiles than there are SMs: 128x128 blocks of 4 warps.
using SmallTiling = Bf16Tiling<128, 128, 4, 2>;

struct Problem {
  int m, n, k;
  float alpha, beta;
  const __nv_bfloat16* a;
  const __nv_bfloat16* b;
  float* c;
};

// ---- the instructions (sm_80 and later) ---------------------------------------------------

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define LABKIT_BF16_MMA 1
#endif

#ifdef LABKIT_BF16_MMA
__device__ __forceinline__ uint32_t shared_address(const void* p) {
  return uint32_t(__cvta_generic_to_shared(p));
}
#endif

// Copies 16 bytes, or writes 16 zero bytes when `valid` is false (nothing is read then).
__device__ __forceinline__ void copy16_async(void* dst, const void* src, bool valid) {
#ifdef LABKIT_BF16_MMA
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(shared_address(dst)), "l"(src),
               "r"(valid ? 16 : 0));
#endif
}

__device__ __forceinline__ void commit_copies() {
#ifdef LABKIT_BF16_MMA
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}

template <int Pending>
__device__ __forceinline__ void wait_copies() {
#ifdef LABKIT_BF16_MMA
  asm volatile("cp.async.wait_group %0;\n" ::"n"(Pending));
#endif
}

// Four 8x8 matrices of 16-bit values; lane l gives the address of row l % 8 of matrix l / 8.
__device__ __forceinline__ void load_matrix_x4(uint32_t (&r)[4], const void* row_address) {
#ifdef LABKIT_BF16_MMA
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(shared_address(row_address)));
#endif
}

// The same, each matrix transposed on the way: for B, stored k-major, read n-major.
__device__ __forceinline__ void load_matrix_x4_transposed(uint32_t (&r)[4], const void* row_address) {
#ifdef LABKIT_BF16_MMA
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(shared_address(row_address)));
#endif
}

// d += a b for one 16x8x16 tile: BF16 inputs, FP32 accumulators. Registers only, so not
// volatile: the compiler may interleave the MMAs with the next step's ldmatrix (which stay
// volatile, in order with the barriers that guard shared memory).
__device__ __forceinline__ void mma_bf16_16x8x16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
#ifdef LABKIT_BF16_MMA
  asm(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#endif
}

// ---- the kernel ---------------------------------------------------------------------------

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

// 8 consecutive BF16 of a row from `row` (columns col..col+7 of a row `length` long), zeros
// past its end: the path for rows that are not 16-byte aligned.
__device__ __forceinline__ uint4 load8_checked(const __nv_bfloat16* row, int col, int length, bool row_valid) {
  const unsigned short* bits = reinterpret_cast<const unsigned short*>(row);
  unsigned short v[8];
#pragma unroll
  for (int e = 0; e < 8; ++e) v[e] = row_valid && col + e < length ? bits[col + e] : 0;
  return make_uint4(v[0] | uint32_t(v[1]) << 16, v[2] | uint32_t(v[3]) << 16, v[4] | uint32_t(v[5]) << 16,
                    v[6] | uint32_t(v[7]) << 16);
}

// Starts the copy of the k-tile at k0 into one stage: A's block_rows x 32 and B's
// 32 x block_cols, 16 bytes per copy. `aligned`: every row of A and B is 16-byte aligned, so
// a vector is either wholly inside the matrix or wholly past its edge (zero-filled).
template <class T, bool aligned>
__device__ __forceinline__ void copy_tile(const Problem& p, int2 origin, int k0, __nv_bfloat16* as,
                                          __nv_bfloat16* bs) {
#pragma unroll
  for (int l = 0; l < T::a_vectors_per_thread; ++l) {
    const int v = threadIdx.x + l * T::threads;
    const int row = v / T::a_vectors_per_row, col = v % T::a_vectors_per_row * 8;
    const int global_row = origin.x + row, global_k = k0 + col;
    __nv_bfloat16* dst = as + row * T::a_stride + col;
    if constexpr (aligned) {
      const bool valid = global_row < p.m && global_k < p.k;
      copy16_async(dst, valid ? p.a + size_t(global_row) * p.k + global_k : p.a, valid);
    } else {
      const bool row_valid = global_row < p.m;
      *reinterpret_cast<uint4*>(dst) =
          load8_checked(p.a + size_t(row_valid ? global_row : 0) * p.k, global_k, p.k, row_valid);
    }
  }
#pragma unroll
  for (int l = 0; l < T::b_vectors_per_thread; ++l) {
    const int v = threadIdx.x + l * T::threads;
    const int kk = v / T::b_vectors_per_row, col = v % T::b_vectors_per_row * 8;
    const int global_k = k0 + kk, global_col = origin.y + col;
    __nv_bfloat16* dst = bs + kk * T::b_stride + col;
    if constexpr (aligned) {
      const bool valid = global_k < p.k && global_col < p.n;
      copy16_async(dst, valid ? p.b + size_t(global_k) * p.n + global_col : p.b, valid);
    } else {
      const bool row_valid = global_k < p.k;
      *reinterpret_cast<uint4*>(dst) =
          load8_checked(p.b + size_t(row_valid ? global_k : 0) * p.n, global_col, p.n, row_valid);
    }
  }
}

// One stage's MMAs for this warp: two k16 steps, each 4 A fragments (ldmatrix.x4), 8 B
// fragments (4 ldmatrix.x4.trans, two 16x8 tiles each) and 4 x 8 MMAs.
template <class T>
__device__ __forceinline__ void multiply_stage(const __nv_bfloat16* as, const __nv_bfloat16* bs, int warp_row,
                                               int warp_col, float (&acc)[T::m_tiles][T::n_tiles][4]) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int kk = 0; kk < T::tile_depth; kk += 16) {
    uint32_t a[T::m_tiles][4];
    uint32_t b[T::n_tiles][2];
    // A: matrices 0-3 are rows 0-7 / 8-15 at k 0-7, then rows 0-7 / 8-15 at k 8-15, which is
    // the MMA's a0..a3; lane l points at row l % 16, k 8 * (l / 16).
#pragma unroll
    for (int i = 0; i < T::m_tiles; ++i)
      load_matrix_x4(a[i], as + (warp_row + i * 16 + lane % 16) * T::a_stride + kk + lane / 16 * 8);
    // B: matrices 0-3 are k 0-7 / 8-15 at columns 0-7, then k 0-7 / 8-15 at columns 8-15:
    // b0, b1 of two 16x8 tiles; lane l points at k row l % 16, column 8 * (l / 16).
#pragma unroll
    for (int j = 0; j < T::n_tiles; j += 2) {
      uint32_t r[4];
      load_matrix_x4_transposed(r, bs + (kk + lane % 16) * T::b_stride + warp_col + j * 8 + lane / 16 * 8);
      b[j][0] = r[0], b[j][1] = r[1], b[j + 1][0] = r[2], b[j + 1][1] = r[3];
    }
#pragma unroll
    for (int i = 0; i < T::m_tiles; ++i)
#pragma unroll
      for (int j = 0; j < T::n_tiles; ++j) mma_bf16_16x8x16(acc[i][j], a[i], b[j][0], b[j][1]);
  }
}

// Writes two neighbouring columns of one row: C = alpha*acc + beta*C, never reading C when beta
// is 0 (it may hold garbage, NaN included). `paired`: n is even and C 8-byte aligned, so the two
// columns are both inside the matrix or both past its edge, and go out as one float2.
template <bool paired>
__device__ __forceinline__ void store_pair(const Problem& p, int row, int col, float v0, float v1) {
  if (row >= p.m || col >= p.n) return;
  float* out = p.c + size_t(row) * p.n + col;
  v0 *= p.alpha, v1 *= p.alpha;
  if constexpr (paired) {
    if (p.beta != 0.f) {
      const float2 old = *reinterpret_cast<const float2*>(out);
      v0 = fmaf(p.beta, old.x, v0);
      v1 = fmaf(p.beta, old.y, v1);
    }
    *reinterpret_cast<float2*>(out) = make_float2(v0, v1);
  } else {
    out[0] = p.beta != 0.f ? fmaf(p.beta, out[0], v0) : v0;
    if (col + 1 < p.n) out[1] = p.beta != 0.f ? fmaf(p.beta, out[1], v1) : v1;
  }
}

// Before sm_80 the instructions above compile to nothing; bf16_gemm never launches this there.
template <class T, bool aligned>
__global__ void __launch_bounds__(T::threads, T::blocks_per_sm) bf16_gemm_mma_kernel(Problem p) {
  extern __shared__ uint4 shared_vectors[];
  __nv_bfloat16* shared = reinterpret_cast<__nv_bfloat16*>(shared_vectors);

  const int2 origin = block_origin<T>();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int warp_row = warp / T::warps_across * T::warp_rows;
  const int warp_col = warp % T::warps_across * T::warp_cols;
  float acc[T::m_tiles][T::n_tiles][4] = {};

  const int tiles = (p.k + T::tile_depth - 1) / T::tile_depth;
  // Fill all stages but one; a commit per stage, empty or not, keeps the group count fixed.
#pragma unroll
  for (int s = 0; s < T::stages - 1; ++s) {
    if (s < tiles) {
      __nv_bfloat16* stage = shared + s * T::stage_elements;
      copy_tile<T, aligned>(p, origin, s * T::tile_depth, stage, stage + T::a_elements);
    }
    commit_copies();
  }

  for (int t = 0; t < tiles; ++t) {
    wait_copies<T::stages - 2>();  // tile t has landed (for this thread)...
    __syncthreads();               // ...for every thread, and stage (t - 1) % stages is free
    const int next = t + T::stages - 1;
    if (next < tiles) {
      __nv_bfloat16* stage = shared + (next % T::stages) * T::stage_elements;
      copy_tile<T, aligned>(p, origin, next * T::tile_depth, stage, stage + T::a_elements);
    }
    commit_copies();
    const __nv_bfloat16* stage = shared + (t % T::stages) * T::stage_elements;
    multiply_stage<T>(stage, stage + T::a_elements, warp_row, warp_col, acc);
  }
  wait_copies<0>();  // no copy outlives the block

  // Accumulator tile (i, j): c0, c1 at row lane / 4, columns 2 (lane % 4) and + 1; c2, c3 eight
  // rows below.
  const int row0 = origin.x + warp_row + lane / 4, col0 = origin.y + warp_col + lane % 4 * 2;
#pragma unroll
  for (int i = 0; i < T::m_tiles; ++i)
#pragma unroll
    for (int j = 0; j < T::n_tiles; ++j) {
      store_pair<aligned>(p, row0 + i * 16, col0 + j * 8, acc[i][j][0], acc[i][j][1]);
      store_pair<aligned>(p, row0 + i * 16 + 8, col0 + j * 8, acc[i][j][2], acc[i][j][3]);
    }
}

// Before sm_80: FP32 FMAs on BF16 values converted in shared memory, 32x32 tiles.
constexpr int fallback_tile = 32;

__global__ void bf16_gemm_fp32_tiled_kernel(Problem p) {
  __shared__ float tile_a[fallback_tile][fallback_tile];
  __shared__ float tile_b[fallback_tile][fallback_tile + 1];
  const int col = blockIdx.x * fallback_tile + threadIdx.x;
  const int row = blockIdx.y * fallback_tile + threadIdx.y;
  float dot = 0.f;
  for (int k0 = 0; k0 < p.k; k0 += fallback_tile) {
    const int ka = k0 + threadIdx.x, kb = k0 + threadIdx.y;
    tile_a[threadIdx.y][threadIdx.x] = row < p.m && ka < p.k ? __bfloat162float(p.a[size_t(row) * p.k + ka]) : 0.f;
    tile_b[threadIdx.y][threadIdx.x] = kb < p.k && col < p.n ? __bfloat162float(p.b[size_t(kb) * p.n + col]) : 0.f;
    __syncthreads();
#pragma unroll 8
    for (int e = 0; e < fallback_tile; ++e) dot = fmaf(tile_a[threadIdx.y][e], tile_b[e][threadIdx.x], dot);
    __syncthreads();
  }
  if (row < p.m && col < p.n) {
    float* out = p.c + size_t(row) * p.n + col;
    *out = p.beta != 0.f ? fmaf(p.beta, *out, p.alpha * dot) : p.alpha * dot;
  }
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// 16-byte cp.async needs every row of A and B to start on 16 bytes, and the paired stores need
// C's rows on 8.
bool rows_aligned(const Problem& p) {
  return p.k % 8 == 0 && p.n % 8 == 0 && aligned16(p.a) && aligned16(p.b) && aligned16(p.c);
}

template <class T, bool aligned>
void launch_mma(const Problem& p, cudaStream_t stream) {
  static const bool configured = [] {  // more than 48 KB of dynamic shared memory needs opting in
    cudaFuncSetAttribute(bf16_gemm_mma_kernel<T, aligned>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                         T::smem_bytes);
    return true;
  }();
  (void)configured;
  const dim3 grid((p.n + T::block_cols - 1) / T::block_cols, (p.m + T::block_rows - 1) / T::block_rows);
  bf16_gemm_mma_kernel<T, aligned><<<grid, T::threads, T::smem_bytes, stream>>>(p);
}

template <class T>
void launch_tiling(const Problem& p, cudaStream_t stream) {
  if (rows_aligned(p))
    launch_mma<T, true>(p, stream);
  else
    launch_mma<T, false>(p, stream);
}

struct DeviceTraits {
  int sm_count = 1;
  int shared_bytes = 0;       // per block, opted in
  bool has_bf16_mma = false;  // sm_80 or later
};

const DeviceTraits& device_traits() {
  static const DeviceTraits traits = [] {
    DeviceTraits t;
    int device = 0, sms = 0, major = 0, shared = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
    cudaDeviceGetAttribute(&shared, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
    t.sm_count = sms > 0 ? sms : 1;
    t.shared_bytes = shared;
    t.has_bf16_mma = major >= 8;
    return t;
  }();
  return traits;
}

// Large tiles when they give every SM a block and fit its shared memory (an H100 or A100 has
// room for their 106 KiB, an sm_86 or sm_89 GPU only for the small tiles' 74 KiB).
bool wants_large_tiles(const Problem& p) {
  const long long blocks = (long long)((p.m + LargeTiling::block_rows - 1) / LargeTiling::block_rows) *
                           ((p.n + LargeTiling::block_cols - 1) / LargeTiling::block_cols);
  return blocks >= device_traits().sm_count && LargeTiling::smem_bytes <= device_traits().shared_bytes;
}

}  // namespace

extern "C" void bf16_gemm(int m, int n, int k, float alpha, const __nv_bfloat16* d_a, const __nv_bfloat16* d_b,
                          float beta, float* d_c, cudaStream_t stream) {
  if (m <= 0 || n <= 0) return;
  const Problem p{m, n, k, alpha, beta, d_a, d_b, d_c};
  if (!device_traits().has_bf16_mma || SmallTiling::smem_bytes > device_traits().shared_bytes) {
    const dim3 block(fallback_tile, fallback_tile);
    const dim3 grid((n + fallback_tile - 1) / fallback_tile, (m + fallback_tile - 1) / fallback_tile);
    bf16_gemm_fp32_tiled_kernel<<<grid, block, 0, stream>>>(p);
  } else if (wants_large_tiles(p)) {
    launch_tiling<LargeTiling>(p, stream);
  } else {
    launch_tiling<SmallTiling>(p, stream);
  }
}
