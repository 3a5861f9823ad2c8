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
