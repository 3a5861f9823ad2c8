// Lab 04 contract. Do not edit: the grader compiles your sgemm.cu against its own copy.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

// C = alpha * A * B + beta * C in FP32, all three matrices row-major and densely packed:
// A is m x k (element (i, p) at d_a[i * k + p]), B is k x n, C is m x n. m, n, k >= 1.
// When beta is 0, C is output only: its old contents may be garbage, NaN included, and must
// not show through. The pointers come from cudaMalloc (256-byte aligned), but a row is only
// 16-byte aligned when its length is a multiple of 4. Enqueue all work on `stream`; the
// function may return before the work finishes. No TF32 or lower precision: accumulate in FP32.
extern "C" void sgemm(int m, int n, int k, float alpha, const float* d_a, const float* d_b, float beta,
                      float* d_c, cudaStream_t stream);

// Part 2 (bf16_gemm.cu): C = alpha * A * B + beta * C with A and B in BF16 and C in FP32, laid
// out as above (A m x k, B k x n, C m x n, row-major, densely packed; m, n, k >= 1). Every
// product of two BF16 values is exact in FP32: accumulate in FP32 (tensor cores with FP32
// accumulators, or FP32 FMAs), never in BF16 or FP16. When beta is 0, C is output only, as
// above. The pointers come from cudaMalloc, but a row of A is only 16-byte aligned when k is a
// multiple of 8, a row of B when n is, and a row of C when n is a multiple of 4. Enqueue all
// work on `stream`; the function may return before the work finishes.
extern "C" void bf16_gemm(int m, int n, int k, float alpha, const __nv_bfloat16* d_a, const __nv_bfloat16* d_b,
                          float beta, float* d_c, cudaStream_t stream);
