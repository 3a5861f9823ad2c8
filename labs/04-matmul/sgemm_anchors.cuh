// Lab 04 anchors: the kernels each rung of the ladder is measured against, shared by the
// checks (test_sgemm.cu) and the benchmark (bench_sgemm.cu). Each has the contract's signature.
//   naive-uncoalesced  the starter's mapping (the chapter's RunAsGpu_1): not an anchor, shown
//                      in the benchmark to reproduce the chapter's comparison
//   naive-coalesced    rung 1: the chapter's RunAsGpu_2, neighbouring threads on neighbouring columns
//   tiled              rung 2: the tiled chapter's sgemm_kernel_v2, 32x32 shared-memory tiles
//   cublas             rung 3: cublasSgemm in FP32 (TF32 off)
// and part 2's (bf16_gemm, BF16 in, FP32 out):
//   bf16 fp32 tiled    the part's starter, the chapter's tiled kernel reading BF16: not an
//                      anchor, shown in the benchmark
//   cublas bf16        every part 2 case's anchor: cublasGemmEx, BF16 inputs, FP32 C, FP32
//                      compute (tensor cores with FP32 accumulators)
#pragma once

#include <labkit/cuda_check.h>

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdlib>
#include <stdexcept>
#include <string>

namespace sgemm_anchors {

using SgemmFn = void(int m, int n, int k, float alpha, const float* d_a, const float* d_b, float beta,
                     float* d_c, cudaStream_t stream);

// C[row][col] = alpha * dot + beta * C[row][col], without reading C when beta is 0.
__device__ __forceinline__ void write_output(float* c, size_t index, float alpha, float dot, float beta) {
  c[index] = beta == 0.f ? alpha * dot : alpha * dot + beta * c[index];
}

// threadIdx.x walks down rows: a warp reads 32 rows of A (stride k) and writes 32 rows of C.
__global__ void naive_uncoalesced_kernel(int m, int n, int k, float alpha, const float* a, const float* b,
                                         float beta, float* c) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  const int col = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= m || col >= n) return;
  float dot = 0.f;
  for (int p = 0; p < k; ++p) dot += a[size_t(row) * k + p] * b[size_t(p) * n + col];
  write_output(c, size_t(row) * n + col, alpha, dot, beta);
}

// threadIdx.x walks along columns: a warp reads 32 neighbouring floats of B and writes 32 of C.
__global__ void naive_coalesced_kernel(int m, int n, int k, float alpha, const float* a, const float* b,
                                       float beta, float* c) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= m || col >= n) return;
  float dot = 0.f;
  for (int p = 0; p < k; ++p) dot += a[size_t(row) * k + p] * b[size_t(p) * n + col];
  write_output(c, size_t(row) * n + col, alpha, dot, beta);
}

constexpr int chapter_tile = 32;  // the chapter's best block size

__device__ __forceinline__ float as_float(float v) { return v; }
__device__ __forceinline__ float as_float(__nv_bfloat16 v) { return __bfloat162float(v); }

// The chapter's tiled kernel, with bounds checks added so it runs on any shape. With BF16
// operands (part 2's starter) each element becomes FP32 on its way into shared memory.
template <typename T>
__global__ void chapter_tiled_kernel(int m, int n, int k, float alpha, const T* a, const T* b, float beta, float* c) {
  __shared__ float tile_a[chapter_tile][chapter_tile];
  __shared__ float tile_b[chapter_tile][chapter_tile];
  const int col = blockIdx.x * chapter_tile + threadIdx.x;
  const int row = blockIdx.y * chapter_tile + threadIdx.y;
  float dot = 0.f;
  for (int p0 = 0; p0 < k; p0 += chapter_tile) {
    const int pa = p0 + threadIdx.x, pb = p0 + threadIdx.y;
    tile_a[threadIdx.y][threadIdx.x] = row < m && pa < k ? as_float(a[size_t(row) * k + pa]) : 0.f;
    tile_b[threadIdx.y][threadIdx.x] = pb < k && col < n ? as_float(b[size_t(pb) * n + col]) : 0.f;
    __syncthreads();
    for (int e = 0; e < chapter_tile; ++e) dot += tile_a[threadIdx.y][e] * tile_b[e][threadIdx.x];
    __syncthreads();
  }
  if (row < m && col < n) write_output(c, size_t(row) * n + col, alpha, dot, beta);
}

inline unsigned blocks(int count, int per_block) { return unsigned((count + per_block - 1) / per_block); }

inline void naive_uncoalesced(int m, int n, int k, float alpha, const float* d_a, const float* d_b, float beta,
                              float* d_c, cudaStream_t stream) {
  const dim3 block(32, 8);
  naive_uncoalesced_kernel<<<dim3(blocks(m, 32), blocks(n, 8)), block, 0, stream>>>(m, n, k, alpha, d_a, d_b,
                                                                                    beta, d_c);
}

inline void naive_coalesced(int m, int n, int k, float alpha, const float* d_a, const float* d_b, float beta,
                            float* d_c, cudaStream_t stream) {
  const dim3 block(32, 8);
  naive_coalesced_kernel<<<dim3(blocks(n, 32), blocks(m, 8)), block, 0, stream>>>(m, n, k, alpha, d_a, d_b,
                                                                                  beta, d_c);
}

inline void chapter_tiled(int m, int n, int k, float alpha, const float* d_a, const float* d_b, float beta,
                          float* d_c, cudaStream_t stream) {
  const dim3 block(chapter_tile, chapter_tile);
  chapter_tiled_kernel<<<dim3(blocks(n, chapter_tile), blocks(m, chapter_tile)), block, 0, stream>>>(
      m, n, k, alpha, d_a, d_b, beta, d_c);
}

inline void check_cublas(cublasStatus_t status, const char* call) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string(call) + " failed: " + cublasGetStatusString(status));
}

// One handle per process. TF32 stays off: NVIDIA_TF32_OVERRIDE=1 in the environment would let
// cuBLAS use tensor cores behind the default math mode, so it is cleared before the handle exists.
inline cublasHandle_t cublas_handle(cublasMath_t math = CUBLAS_DEFAULT_MATH) {
  static cublasHandle_t handles[2] = {nullptr, nullptr};
  const int slot = math == CUBLAS_PEDANTIC_MATH ? 1 : 0;
  if (handles[slot] == nullptr) {
    setenv("NVIDIA_TF32_OVERRIDE", "0", 1);
    check_cublas(cublasCreate(&handles[slot]), "cublasCreate");
    check_cublas(cublasSetMathMode(handles[slot], math), "cublasSetMathMode");
  }
  return handles[slot];
}

// cuBLAS is column-major; a row-major C = A B is the column-major C^T = B^T A^T, so the
// operands swap and no transposition is needed.
inline void cublas_sgemm_with(cublasMath_t math, int m, int n, int k, float alpha, const float* d_a,
                              const float* d_b, float beta, float* d_c, cudaStream_t stream) {
  cublasHandle_t handle = cublas_handle(math);
  check_cublas(cublasSetStream(handle, stream), "cublasSetStream");
  check_cublas(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, d_b, n, d_a, k, &beta, d_c, n),
               "cublasSgemm");
}

inline void cublas_sgemm(int m, int n, int k, float alpha, const float* d_a, const float* d_b, float beta,
                         float* d_c, cudaStream_t stream) {
  cublas_sgemm_with(CUBLAS_DEFAULT_MATH, m, n, k, alpha, d_a, d_b, beta, d_c, stream);
}

inline void cublas_sgemm_pedantic(int m, int n, int k, float alpha, const float* d_a, const float* d_b,
                                  float beta, float* d_c, cudaStream_t stream) {
  cublas_sgemm_with(CUBLAS_PEDANTIC_MATH, m, n, k, alpha, d_a, d_b, beta, d_c, stream);
}

using Bf16GemmFn = void(int m, int n, int k, float alpha, const __nv_bfloat16* d_a, const __nv_bfloat16* d_b,
                        float beta, float* d_c, cudaStream_t stream);

// Part 2's inputs: the harness draws FP32, so the checks and the benchmark round what it drew
// to BF16 on the GPU, both with this kernel.
__global__ void round_to_bf16_kernel(const float* in, size_t count, __nv_bfloat16* out) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < count; i += size_t(gridDim.x) * blockDim.x)
    out[i] = __float2bfloat16_rn(in[i]);
}

// Part 2's starter: the chapter's tiled kernel reading BF16.
inline void bf16_fp32_tiled(int m, int n, int k, float alpha, const __nv_bfloat16* d_a, const __nv_bfloat16* d_b,
                            float beta, float* d_c, cudaStream_t stream) {
  const dim3 block(chapter_tile, chapter_tile);
  chapter_tiled_kernel<<<dim3(blocks(n, chapter_tile), blocks(m, chapter_tile)), block, 0, stream>>>(
      m, n, k, alpha, d_a, d_b, beta, d_c);
}

// cublasGemmEx with BF16 A and B, FP32 C and FP32 compute: cuBLAS runs it on the tensor cores
// with FP32 accumulators (wgmma on an H100), the same arithmetic the contract asks for. Row-major
// as in cublas_sgemm_with: the column-major C^T = B^T A^T.
inline void cublas_bf16_gemm(int m, int n, int k, float alpha, const __nv_bfloat16* d_a, const __nv_bfloat16* d_b,
                             float beta, float* d_c, cudaStream_t stream) {
  cublasHandle_t handle = cublas_handle();
  check_cublas(cublasSetStream(handle, stream), "cublasSetStream");
  check_cublas(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, d_b, CUDA_R_16BF, n, d_a,
                            CUDA_R_16BF, k, &beta, d_c, CUDA_R_32F, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
               "cublasGemmEx");
}

// The anchor a performance case names in its `anchor` field.
inline SgemmFn* by_name(const std::string& name) {
  if (name == "naive-uncoalesced") return naive_uncoalesced;
  if (name == "naive-coalesced") return naive_coalesced;
  if (name == "tiled") return chapter_tiled;
  if (name == "cublas") return cublas_sgemm;
  throw std::invalid_argument("unknown anchor '" + name +
                              "' (naive-uncoalesced, naive-coalesced, tiled or cublas)");
}

}  // namespace sgemm_anchors
