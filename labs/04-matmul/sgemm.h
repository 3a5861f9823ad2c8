// Lab 04 contract. Do not edit: the grader compiles your sgemm.cu against its own copy.
#pragma once

#include <cuda_runtime.h>

// C = alpha * A * B + beta * C in FP32, all three matrices row-major and densely packed:
// A is m x k (element (i, p) at d_a[i * k + p]), B is k x n, C is m x n. m, n, k >= 1.
// When beta is 0, C is output only: its old contents may be garbage, NaN included, and must
// not show through. The pointers come from cudaMalloc (256-byte aligned), but a row is only
// 16-byte aligned when its length is a multiple of 4. Enqueue all work on `stream`; the
// function may return before the work finishes. No TF32 or lower precision: accumulate in FP32.
extern "C" void sgemm(int m, int n, int k, float alpha, const float* d_a, const float* d_b, float beta,
                      float* d_c, cudaStream_t stream);
