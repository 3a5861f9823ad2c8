// Lab 05 contract. Do not edit: the grader compiles your conv2d.cu against its own copy.
#pragma once

#include <cuda_runtime.h>

// The largest filter the contract allows: 15 x 15 = 225 coefficients (900 bytes, a small
// part of the 64 KiB of constant memory).
constexpr int MAX_FILTER_SIZE = 15;

// 2-D cross-correlation, as the chapter computes it (its kernels call it convolution, and so
// do deep-learning libraries, but the filter is NOT flipped). With h = filter_size / 2:
//
//   out(r, c) = sum over i, j in [0, filter_size) of  in(r + i - h, c + j - h) * filter(i, j)
//
// where in(y, x) = 0 outside the image (zero padding, never the edge value), in(y, x) is
// d_in[y * cols + x], filter(i, j) is d_filter[i * filter_size + j] and out(r, c) goes to
// d_out[r * cols + c]. Everything is row-major, densely packed and FP32.
//
// - rows >= 1 and cols >= 1, any values (not multiples of any block size); rows * cols <= 2^30.
// - filter_size is odd, from 1 to MAX_FILTER_SIZE; it may be larger than the image.
// - d_in, d_filter and d_out are device pointers; d_in and d_out start 256-byte aligned (as
//   cudaMalloc gives), so a row starts 16-byte aligned only when cols is a multiple of 4.
//   d_out does not overlap d_in or d_filter. Write d_out[0 .. rows * cols) and nothing else.
// - d_in and d_filter are read only; the filter may change from one call to the next.
// - Enqueue all work on `stream`; the function may return before the work finishes.
extern "C" void conv2d(const float* d_in, int rows, int cols, const float* d_filter, int filter_size, float* d_out,
                       cudaStream_t stream);

// The same cross-correlation for a separable filter, given as two vectors of filter_size
// coefficients: a column vector (vertical) and a row vector (horizontal), whose outer product
// is the 2-D filter,
//
//   filter(i, j) = d_col_filter[i] * d_row_filter[j],   so
//   out(r, c) = sum over i of d_col_filter[i] * (sum over j of d_row_filter[j] * in(r + i - h, c + j - h))
//
// with the same zero padding, layout, sizes and pointer rules as conv2d. The result must match
// conv2d's with that filter up to FP32 rounding (the checks allow for any order of the sums:
// a row pass then a column pass, the other way round, or all filter_size^2 products at once).
// The two vectors need not be equal nor symmetric (a Sobel filter is [1 2 1]^T x [-1 0 1]).
//
// - d_row_filter and d_col_filter are device pointers to filter_size floats each, read only,
//   and may change from one call to the next.
// - d_temp is rows * cols floats of device scratch for an intermediate image (a two-pass
//   version's row pass), 256-byte aligned; its contents on entry are undefined (anything,
//   NaN included), and it may be left holding anything. A version that needs no scratch
//   ignores it.
// - Write d_out[0 .. rows * cols) and d_temp[0 .. rows * cols) and nothing else; d_out does not
//   overlap d_in, d_temp or the filters.
extern "C" void conv2d_separable(const float* d_in, int rows, int cols, const float* d_row_filter,
                                 const float* d_col_filter, int filter_size, float* d_temp, float* d_out,
                                 cudaStream_t stream);
