// Lab 02 contract. Do not edit: the grader compiles your dot.cu and argmax_float.cu against its
// own copy.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

// Writes the sum of d_a[i] * d_b[i] over i in [0, n) to the device scalar *d_result,
// overwriting whatever it held (n = 0 gives 0). Products and sum are 64-bit: the result is
// exact whenever the true sum fits in int64, and otherwise equals it modulo 2^64, the way
// 64-bit two's-complement additions wrap. d_a and d_b are 4-byte aligned, not necessarily
// 16-byte aligned, and not necessarily aligned alike. Enqueue all work on `stream`; the
// function may return before the work finishes.
extern "C" void dot(const int32_t* d_a, const int32_t* d_b, size_t n, int64_t* d_result,
                    cudaStream_t stream);

// The atomics exercise. Writes to *d_index the index of the largest value in d_in[0..n),
// the smallest such index when the largest value occurs more than once (as std::max_element
// picks), overwriting whatever *d_index held. 1 <= n < 2^32. Enqueue all work on `stream`.
extern "C" void argmax(const int32_t* d_in, size_t n, int64_t* d_index, cudaStream_t stream);

// Part 2 (argmax_float.cu), atomics built from atomicCAS. Writes to *d_index the index of the
// largest value in d_in[0..n) as std::max_element orders floats: the smallest such index when
// the largest value occurs more than once, and -0.0f and +0.0f equal (a tie). d_in holds no NaN;
// infinities are allowed. 1 <= n < 2^32. Enqueue all work on `stream`; the function may return
// before the work finishes.
extern "C" void argmax_float(const float* d_in, size_t n, int64_t* d_index, cudaStream_t stream);
