// Hands part 2's multiply to cuBLAS (cublasGemmEx on BF16), the lab's own anchor.
#include "sgemm.h"

#include <cublas_v2.h>

extern "C" void bf16_gemm(int m, int n, int k, float alpha, const __nv_bfloat16* d_a, const __nv_bfloat16* d_b,
                          float beta, float* d_c, cudaStream_t stream) {
  static cublasHandle_t handle = [] { cublasHandle_t h; cublasCreate(&h); return h; }();
  cublasSetStream(handle, stream);
  // Row-major C = A B is column-major C^T = B^T A^T.
  cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, d_b, CUDA_R_16BF, n, d_a, CUDA_R_16BF, k, &beta,
               d_c, CUDA_R_32F, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}
