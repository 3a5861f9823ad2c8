// Hands the multiply to cuBLAS.
#include "sgemm.h"

#include <cublas_v2.h>

extern "C" void sgemm(int m, int n, int k, float alpha, const float* d_a, const float* d_b, float beta,
                      float* d_c, cudaStream_t stream) {
  static cublasHandle_t handle = [] { cublasHandle_t h; cublasCreate(&h); return h; }();
  cublasSetStream(handle, stream);
  // Row-major C = A B is column-major C^T = B^T A^T.
  cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, d_b, n, d_a, k, &beta, d_c, n);
}
