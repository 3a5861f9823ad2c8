// Lab 06 contract. Do not edit: the grader compiles your scan.cu against its own copy.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

// Inclusive prefix sum: when the work finishes, d_out[i] = d_in[0] + d_in[1] + ... + d_in[i]
// for every i in [0, n), in int32 with wrapping (two's complement) arithmetic, as unsigned
// 32-bit additions give. n may be anything from 0 to 2^30. d_out does not overlap d_in, and
// both are 16-byte aligned (as cudaMalloc returns them). Write nothing outside d_out[0..n)
// and do not modify d_in.
//
// Enqueue all work on `stream`; the function may return before the work finishes. It may use
// temporary device memory that it allocates itself: cudaMallocAsync/cudaFreeAsync on `stream`
// each call, or a buffer allocated once and kept between calls (then calls must not overlap
// in time, which the grader never does).
extern "C" void inclusive_scan(const int32_t* d_in, size_t n, int32_t* d_out, cudaStream_t stream);
