// Lab 07 contract. Do not edit: the grader compiles your compact.cu against its own copy.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

// "Positive" means x > 0.0f, as IEEE comparison defines it: +0.0f, -0.0f and every NaN are
// NOT positive; positive denormals and +inf are.
//
// Stream compaction: writes the positive elements of d_in[0..n), in their input order, to
// d_out[0..count), and count to *d_count (a size_t in device memory). Nothing at or past
// d_out + count is written (d_out has room for n elements, but the rest must stay untouched).
extern "C" void compact_positive(const float* d_in, size_t n, float* d_out, size_t* d_count, cudaStream_t stream);

// Stable partition (split): writes all n elements to d_out[0..n): first the positive ones
// in input order, then all the others (zeros, negatives, NaNs) in input order. Values are
// moved bit for bit (a NaN keeps its payload, -0.0f stays -0.0f).
extern "C" void split_positive(const float* d_in, size_t n, float* d_out, cudaStream_t stream);

// For both: n may be anything from 0 to 2^30. d_out does not overlap d_in, and both are
// 16-byte aligned (as cudaMalloc returns them). Do not modify d_in.
//
// Enqueue all work on `stream`; the functions may return before the work finishes. They may
// use temporary device memory that they allocate themselves: cudaMallocAsync/cudaFreeAsync
// on `stream` each call, or a buffer allocated once and kept between calls (then calls must
// not overlap in time, which the grader never does).
