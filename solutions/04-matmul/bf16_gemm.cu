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
//
// On an H100 (sm_90a code), aligned rows take the next rung instead, the path cuBLAS takes:
//  5. `wgmma.mma_async`, which one warpgroup (4 warps) issues together and which reads both
//     operands straight from shared memory through matrix descriptors (no ldmatrix, no
//     fragments in registers but the accumulators), fed by TMA (`cp.async.bulk.tensor`): one
//     thread copies a whole 2-D tile, zero-filled past the matrix's edges and laid out with the
//     128-byte swizzle the descriptors name, and an mbarrier counts its bytes in. The block is
//     warp-specialised: one producer warpgroup (one thread issuing TMA, its registers given
//     away with setmaxnreg) and two consumer warpgroups, each a 64 x block_cols slice of C in
//     FP32 accumulators; 128x256 (or 128x128) blocks, tiles of depth 64, 4 (or 6) stages, a
//     full and an empty mbarrier per stage. It needs k % 8 == 0 and n % 8 == 0 (TMA's 16-byte
//     row strides), m and n of at least 128 and k of at least 64, and a build with sm_90a code;
//     anything else takes the mma.sync kernel above.
//
// On an H100 only the wgmma path comes near cublasGemmEx's rate; the mma.sync kernel stays well
// short of it (docs/benchmarks/04-matmul.txt; docs/design/04-matmul.md has both measured).
#include "sgemm.h"

#include <cuda.h>  // CUtensorMap and its enums; the function that encodes one comes from the driver at run time
#include <cudaTypedefs.h>

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

// ---- Hopper: wgmma fed by TMA (sm_90a) ----------------------------------------------------

// wgmma, setmaxnreg and the tensor-map copies exist only in the arch-specific target sm_90a
// (meson.build builds 90 as 90a). The device code of this path is compiled there alone; in
// any other build the kernel below has an empty body, and the host sees that (wgmma_compiled)
// and takes the mma.sync kernel.
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define LABKIT_BF16_WGMMA 1
#endif

// One block: a producer warpgroup and two consumer warpgroups, each consumer 64 rows of C by
// block_cols. Tiles of depth 64: a row of A's tile is 128 bytes, the width of the 128-byte
// swizzle. B's tile is stored as it arrives, k rows of n (the wgmma reads it transposed), in
// boxes of 64 columns (128 bytes, the widest box that swizzle allows).
template <int BlockCols, int Stages>
struct WgmmaTiling {
  static constexpr int block_rows = 128;
  static constexpr int block_cols = BlockCols;  // the wgmma's n
  static constexpr int tile_depth = 64;
  static constexpr int stages = Stages;
  static constexpr int group_rows = 8;  // for block_origin

  static constexpr int consumers = 2;
  static constexpr int consumer_rows = 64;  // the wgmma's m
  static constexpr int threads = (consumers + 1) * 128;
  static constexpr int accumulators = consumer_rows * block_cols / 128;  // FP32 per consumer thread
  static constexpr int mma_depth = 16;                                   // the wgmma's k

  static constexpr int row_bytes = tile_depth * 2;  // A's rows, and B's boxes' rows: 128
  static constexpr int a_bytes = block_rows * row_bytes;
  static constexpr int b_box_cols = 64;
  static constexpr int b_boxes = block_cols / b_box_cols;
  static constexpr int b_box_bytes = tile_depth * b_box_cols * 2;
  static constexpr int stage_bytes = a_bytes + b_boxes * b_box_bytes;
  static constexpr int smem_alignment = 1024;  // the swizzle repeats every 8 rows of 128 bytes
  static constexpr int smem_bytes = stages * stage_bytes + smem_alignment;  // slack to align the base

  // Registers per thread after setmaxnreg: the producer needs few, the consumers hold the
  // accumulators. 128 x 40 + 256 x 232 = 64512 of the SM's 65536.
  static constexpr int producer_registers = 40;
  static constexpr int consumer_registers = 232;

  static_assert(row_bytes == 128, "a tile row is one 128-byte swizzle row");
  static_assert(consumers * consumer_rows == block_rows, "the consumers split the block's rows");
  static_assert(tile_depth % mma_depth == 0, "a tile is whole wgmma steps along k");
  static_assert(block_cols % b_box_cols == 0, "B's tile is whole boxes");
  static_assert(accumulators == 64 || accumulators == 128, "the wgmma wrappers below are n = 128 and n = 256");
  static_assert(group_rows >= 1, "block_origin walks groups of block rows");
  static_assert(a_bytes % smem_alignment == 0 && b_box_bytes % smem_alignment == 0 &&
                    stage_bytes % smem_alignment == 0,
                "every tile and box starts on a swizzle period, as the descriptors' base offset 0 says");
  static_assert(128 * producer_registers + consumers * 128 * consumer_registers <= 65536,
                "the register file holds both roles");
};

// 4096^3 and other large problems: 4 stages of 48 KiB.
using WgmmaLargeTiling = WgmmaTiling<256, 4>;
// Problems that give fewer 128x256 tiles than there are SMs: 6 stages of 32 KiB.
using WgmmaSmallTiling = WgmmaTiling<128, 6>;

#ifdef LABKIT_BF16_WGMMA
// A shared-memory matrix descriptor (PTX ISA, "Matrix Descriptor Format" of wgmma): bits 0-13
// the start address >> 4, 16-29 the leading-dimension byte offset >> 4, 32-45 the
// stride-dimension byte offset >> 4, 49-51 the base offset (0: tiles start on 1024 bytes),
// 62-63 the swizzle (1: 128 bytes).
__device__ __forceinline__ uint64_t matrix_descriptor(const void* tile, uint32_t leading_bytes,
                                                      uint32_t stride_bytes) {
  const uint64_t start = (shared_address(tile) & 0x3FFFF) >> 4;
  return start | uint64_t((leading_bytes >> 4) & 0x3FFF) << 16 | uint64_t((stride_bytes >> 4) & 0x3FFF) << 32 |
         uint64_t(1) << 62;
}

// A's 64 rows of a consumer, K-major (k contiguous): 8 rows of 128 bytes per swizzle period,
// the next 8 rows 1024 bytes on (the stride offset). The leading offset is unused with a
// swizzle when a row holds the instruction's whole k (16 BF16 = 32 bytes); 1, as CUTLASS sets.
__device__ __forceinline__ uint64_t a_descriptor(const uint8_t* tile) { return matrix_descriptor(tile, 16, 1024); }

// B's tile, MN-major (n contiguous) and read transposed: a box is 64 columns by 64 k rows,
// 8 k rows of 128 bytes per swizzle period, so the next 8 k rows are 1024 bytes on (the stride
// offset) and the next 64 columns one box on (the leading offset).
template <class T>
__device__ __forceinline__ uint64_t b_descriptor(const uint8_t* tile) {
  return matrix_descriptor(tile, T::b_box_bytes, 1024);
}

// The descriptors' start address advanced by `bytes` (a multiple of 16).
__device__ __forceinline__ uint64_t descriptor_plus(uint64_t descriptor, uint32_t bytes) {
  return descriptor + (bytes >> 4);
}

__device__ __forceinline__ void init_barrier(uint64_t* barrier, int arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(shared_address(barrier)), "r"(arrivals));
}

// The barriers' initialisation visible to the other threads and to the TMA unit (the async
// proxy) before any of them uses one.
__device__ __forceinline__ void fence_barrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// The producer's arrival, announcing the bytes its copies will bring.
__device__ __forceinline__ void arrive_expecting_bytes(uint64_t* barrier, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(shared_address(barrier)),
               "r"(bytes)
               : "memory");
}

__device__ __forceinline__ void arrive(uint64_t* barrier) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(shared_address(barrier)) : "memory");
}

// Waits until the barrier's phase of this parity has completed.
__device__ __forceinline__ void wait_barrier(uint64_t* barrier, uint32_t parity) {
  uint32_t done = 0;
  do {
    asm volatile(
        "{\n .reg .pred ready;\n mbarrier.try_wait.parity.shared::cta.b64 ready, [%1], %2;\n"
        " selp.u32 %0, 1, 0, ready;\n}\n"
        : "=r"(done)
        : "r"(shared_address(barrier)), "r"(parity)
        : "memory");
  } while (!done);
}

// TMA: the box at (inner, outer) (elements; inner is the contiguous dimension) of the tensor
// `map` describes, into shared memory at `dst`, its bytes counted on `barrier`.
__device__ __forceinline__ void copy_box_async(void* dst, const CUtensorMap* map, int inner, int outer,
                                               uint64_t* barrier) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], "
      "[%4];\n" ::"r"(shared_address(dst)),
      "l"(map), "r"(inner), "r"(outer), "r"(shared_address(barrier))
      : "memory");
}

__device__ __forceinline__ void prefetch_tensor_map(const CUtensorMap* map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(map) : "memory");
}

template <int Registers>
__device__ __forceinline__ void release_registers() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(Registers));
}

template <int Registers>
__device__ __forceinline__ void claim_registers() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(Registers));
}

// Orders the warpgroup's register and shared-memory accesses before the wgmma that follow.
__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}

__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}

// Waits until at most `Pending` committed groups of this warpgroup's wgmma are unfinished.
template <int Pending>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(Pending) : "memory");
}

// The compiler sees a wgmma write its accumulators when it is issued, not when it finishes:
// an empty asm that reads and writes each one keeps every other use of them on its side of
// the waits.
template <int N>
__device__ __forceinline__ void fence_accumulators(float (&d)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

#define LABKIT_ACC8(i)                                                                                  \
  "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), \
      "+f"(d[i + 7])

// d (64 x 256, FP32) += A (64 x 16) B (16 x 256), both from shared memory: A K-major, B
// MN-major (the last immediate, imm-trans-b = 1); scale-d 1 (accumulate), no negation.
__device__ __forceinline__ void wgmma_m64k16(float (&d)[128], uint64_t a_descriptor, uint64_t b_descriptor) {
  asm volatile(
      "{\n .reg .pred accumulate;\n setp.ne.b32 accumulate, %130, 0;\n"
      " wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
      "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, "
      "%128, %129, accumulate, 1, 1, 0, 1;\n}\n"
      : LABKIT_ACC8(0), LABKIT_ACC8(8), LABKIT_ACC8(16), LABKIT_ACC8(24), LABKIT_ACC8(32), LABKIT_ACC8(40),
        LABKIT_ACC8(48), LABKIT_ACC8(56), LABKIT_ACC8(64), LABKIT_ACC8(72), LABKIT_ACC8(80), LABKIT_ACC8(88),
        LABKIT_ACC8(96), LABKIT_ACC8(104), LABKIT_ACC8(112), LABKIT_ACC8(120)
      : "l"(a_descriptor), "l"(b_descriptor), "n"(1));
}

// The same for 64 x 128.
__device__ __forceinline__ void wgmma_m64k16(float (&d)[64], uint64_t a_descriptor, uint64_t b_descriptor) {
  asm volatile(
      "{\n .reg .pred accumulate;\n setp.ne.b32 accumulate, %66, 0;\n"
      " wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
      "%64, %65, accumulate, 1, 1, 0, 1;\n}\n"
      : LABKIT_ACC8(0), LABKIT_ACC8(8), LABKIT_ACC8(16), LABKIT_ACC8(24), LABKIT_ACC8(32), LABKIT_ACC8(40),
        LABKIT_ACC8(48), LABKIT_ACC8(56)
      : "l"(a_descriptor), "l"(b_descriptor), "n"(1));
}

#undef LABKIT_ACC8

// The producer (one thread): for each k-tile, wait until its stage is free, announce its bytes
// and start the copies of A's 128 x 64 and of B's boxes of 64 x 64. Boxes wholly past n are
// not copied (their columns of C are never stored, so what their shared memory holds does
// not matter); every other box, partly past an edge, arrives whole, zero-filled.
template <class T>
__device__ __forceinline__ void produce_tiles(const CUtensorMap& a_map, const CUtensorMap& b_map, uint8_t* tiles,
                                              uint64_t* full, uint64_t* empty, int2 origin, int n, int k_tiles) {
  prefetch_tensor_map(&a_map);
  prefetch_tensor_map(&b_map);
  const int b_boxes = min(T::b_boxes, (n - origin.y + T::b_box_cols - 1) / T::b_box_cols);
  const uint32_t stage_bytes = T::a_bytes + b_boxes * T::b_box_bytes;
  for (int t = 0; t < k_tiles; ++t) {
    const int stage = t % T::stages;
    // The consumers' release of the tile this stage held, `stages` tiles ago: that is the
    // empty barrier's phase t / stages - 1.
    if (t >= T::stages) wait_barrier(&empty[stage], (t / T::stages - 1) & 1);
    uint8_t* a_tile = tiles + stage * T::stage_bytes;
    uint8_t* b_tile = a_tile + T::a_bytes;
    const int k0 = t * T::tile_depth;
    arrive_expecting_bytes(&full[stage], stage_bytes);
    copy_box_async(a_tile, &a_map, k0, origin.x, &full[stage]);
    for (int box = 0; box < b_boxes; ++box)
      copy_box_async(b_tile + box * T::b_box_bytes, &b_map, origin.y + box * T::b_box_cols, k0, &full[stage]);
  }
}

// One consumer warpgroup: for each k-tile, wait for its stage, issue the 4 wgmma of depth 16
// over it, and once the previous tile's wgmma are done (one group stays in flight) hand that
// tile's stage back to the producer, one arrival per warp.
template <class T>
__device__ __forceinline__ void consume_tiles(const uint8_t* tiles, uint64_t* full, uint64_t* empty, int consumer,
                                              int k_tiles, float (&acc)[T::accumulators]) {
  const bool warp_leader = threadIdx.x % 32 == 0;
  for (int t = 0; t < k_tiles; ++t) {
    const int stage = t % T::stages;
    wait_barrier(&full[stage], (t / T::stages) & 1);
    const uint8_t* a_tile = tiles + stage * T::stage_bytes + consumer * T::consumer_rows * T::row_bytes;
    const uint8_t* b_tile = tiles + stage * T::stage_bytes + T::a_bytes;
    const uint64_t a_first = a_descriptor(a_tile), b_first = b_descriptor<T>(b_tile);
    fence_accumulators(acc);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < T::tile_depth / T::mma_depth; ++kk) {
      // Along k, A moves 16 BF16 within its 128-byte rows (the hardware applies the swizzle
      // to the address it forms); B moves 16 of its k rows, two swizzle periods.
      wgmma_m64k16(acc, descriptor_plus(a_first, kk * T::mma_depth * 2),
                   descriptor_plus(b_first, kk * T::mma_depth * T::row_bytes));
    }
    wgmma_commit();
    wgmma_wait<1>();
    fence_accumulators(acc);
    if (t > 0 && warp_leader) arrive(&empty[(t - 1) % T::stages]);
  }
  wgmma_wait<0>();
  fence_accumulators(acc);
}

// The accumulators of a consumer thread, as wgmma lays them out (the mma.sync layout repeated
// along n): acc[4 j + 0, 1] at row warp * 16 + lane / 4, columns 8 j + 2 (lane % 4) and + 1;
// acc[4 j + 2, 3] eight rows below.
template <class T>
__device__ __forceinline__ void store_accumulators(const Problem& p, int2 origin, int consumer,
                                                   const float (&acc)[T::accumulators]) {
  const int thread = threadIdx.x % 128, warp = thread / 32, lane = thread % 32;
  const int row = origin.x + consumer * T::consumer_rows + warp * 16 + lane / 4;
  const int col = origin.y + lane % 4 * 2;
#pragma unroll
  for (int j = 0; j < T::block_cols / 8; ++j) {
    store_pair<true>(p, row, col + j * 8, acc[4 * j], acc[4 * j + 1]);
    store_pair<true>(p, row + 8, col + j * 8, acc[4 * j + 2], acc[4 * j + 3]);
  }
}
#endif

// Without sm_90a code the body is empty, and has no static shared memory: that is how the host
// tells (wgmma_compiled), and it never launches it then. a_map: A, in boxes of 128 rows by 64
// k; b_map: B, in boxes of 64 k rows by 64 columns; both swizzled 128 bytes.
template <class T>
__global__ void __launch_bounds__(T::threads, 1)
    bf16_gemm_wgmma_kernel(const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap b_map,
                           Problem p) {
#ifdef LABKIT_BF16_WGMMA
  __shared__ uint64_t full[T::stages], empty[T::stages];
  extern __shared__ uint8_t dynamic_shared[];
  // The 128-byte swizzle is a function of address bits 4-9: tiles start on 1024 bytes.
  uint8_t* tiles = dynamic_shared + (T::smem_alignment - shared_address(dynamic_shared) % T::smem_alignment) %
                                        T::smem_alignment;

  const int2 origin = block_origin<T>();
  const int k_tiles = (p.k + T::tile_depth - 1) / T::tile_depth;
  const int warpgroup = threadIdx.x / 128;
  if (threadIdx.x == 0) {
    for (int s = 0; s < T::stages; ++s) {
      init_barrier(&full[s], 1);                    // the producer's arrival, plus the bytes
      init_barrier(&empty[s], T::consumers * 4);  // one arrival per consumer warp
    }
    fence_barrier_init();
  }
  __syncthreads();

  if (warpgroup == 0) {
    release_registers<T::producer_registers>();
    if (threadIdx.x == 0) produce_tiles<T>(a_map, b_map, tiles, full, empty, origin, p.n, k_tiles);
  } else {
    claim_registers<T::consumer_registers>();
    const int consumer = warpgroup - 1;
    float acc[T::accumulators] = {};
    consume_tiles<T>(tiles, full, empty, consumer, k_tiles, acc);
    store_accumulators<T>(p, origin, consumer, acc);
  }
#endif
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
  bool is_sm90 = false;       // what sm_90a code runs on (an H100 or H200)
};

const DeviceTraits& device_traits() {
  static const DeviceTraits traits = [] {
    DeviceTraits t;
    int device = 0, sms = 0, major = 0, minor = 0, shared = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device);
    cudaDeviceGetAttribute(&shared, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
    t.sm_count = sms > 0 ? sms : 1;
    t.shared_bytes = shared;
    t.has_bf16_mma = major >= 8;
    t.is_sm90 = major == 9 && minor == 0;
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

// ---- launching the wgmma kernel ----------------------------------------------------------

// The driver's cuTensorMapEncodeTiled, found at run time through the runtime, so the module
// needs no -lcuda; null when the driver has none.
PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
  static const PFN_cuTensorMapEncodeTiled_v12000 encode = [] {
    void* function = nullptr;
    cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
    const cudaError_t status =
        cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &function, 12000, cudaEnableDefault, &found);
    return status == cudaSuccess && found == cudaDriverEntryPointSuccess
               ? reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(function)
               : nullptr;
  }();
  return encode;
}

// A row-major rows x cols BF16 matrix as TMA sees it (the contiguous dimension first), copied
// in boxes of box_rows x box_cols with the 128-byte swizzle and zeros past its edges. False
// when the driver refuses it (rows not 16-byte aligned, among others).
bool encode_tensor_map(CUtensorMap& map, const __nv_bfloat16* matrix, int rows, int cols, int box_rows,
                       int box_cols) {
  const PFN_cuTensorMapEncodeTiled_v12000 encode = tensor_map_encoder();
  if (encode == nullptr) return false;
  const cuuint64_t dims[2] = {cuuint64_t(cols), cuuint64_t(rows)};
  const cuuint64_t row_stride_bytes[1] = {cuuint64_t(cols) * sizeof(__nv_bfloat16)};
  const cuuint32_t box[2] = {cuuint32_t(box_cols), cuuint32_t(box_rows)};
  const cuuint32_t element_strides[2] = {1, 1};
  return encode(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<__nv_bfloat16*>(matrix), dims,
                row_stride_bytes, box, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

// Whether this build holds the kernel's sm_90a body for this GPU: only that body has static
// shared memory (its mbarriers). A build without sm_90a code (gpu_arch without 90, or a hand
// build with -arch=sm_90) gets the empty body from PTX, and the mma.sync kernel runs instead.
template <class T>
bool wgmma_compiled() {
  static const bool compiled = [] {
    cudaFuncAttributes attributes{};
    if (cudaFuncGetAttributes(&attributes, bf16_gemm_wgmma_kernel<T>) != cudaSuccess) {
      cudaGetLastError();  // no image of it for this GPU: an answer, not an error to report later
      return false;
    }
    return attributes.sharedSizeBytes > 0;
  }();
  return compiled;
}

// Launches the wgmma kernel when it applies; false leaves the problem to the mma.sync kernel.
template <class T>
bool launch_wgmma(const Problem& p, cudaStream_t stream) {
  if (T::smem_bytes > device_traits().shared_bytes || !wgmma_compiled<T>()) return false;
  CUtensorMap a_map, b_map;
  if (!encode_tensor_map(a_map, p.a, p.m, p.k, T::block_rows, T::tile_depth) ||
      !encode_tensor_map(b_map, p.b, p.k, p.n, T::tile_depth, T::b_box_cols))
    return false;
  static const bool configured = [] {  // more than 48 KB of dynamic shared memory needs opting in
    cudaFuncSetAttribute(bf16_gemm_wgmma_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize, T::smem_bytes);
    return true;
  }();
  (void)configured;
  const dim3 grid((p.n + T::block_cols - 1) / T::block_cols, (p.m + T::block_rows - 1) / T::block_rows);
  bf16_gemm_wgmma_kernel<T><<<grid, T::threads, T::smem_bytes, stream>>>(a_map, b_map, p);
  return true;
}

// The wgmma path: an H100 or H200, rows TMA can copy (16-byte aligned: k and n multiples of 8),
// and at least one whole block of work (smaller problems are latency, which the mma.sync
// kernel's smaller blocks serve as well). Large tiles when they are whole in n and give every
// SM a block.
bool try_wgmma(const Problem& p, cudaStream_t stream) {
  using Large = WgmmaLargeTiling;
  using Small = WgmmaSmallTiling;
  if (!device_traits().is_sm90 || !rows_aligned(p)) return false;
  if (p.m < Small::block_rows || p.n < Small::block_cols || p.k < Small::tile_depth) return false;
  const long long large_blocks = (long long)((p.m + Large::block_rows - 1) / Large::block_rows) *
                                 ((p.n + Large::block_cols - 1) / Large::block_cols);
  if (p.n >= Large::block_cols && large_blocks >= device_traits().sm_count && launch_wgmma<Large>(p, stream))
    return true;
  return launch_wgmma<Small>(p, stream);
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
  } else if (try_wgmma(p, stream)) {
    return;  // Hopper's path took it
  } else if (wants_large_tiles(p)) {
    launch_tiling<LargeTiling>(p, stream);
  } else {
    launch_tiling<SmallTiling>(p, stream);
  }
}
