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

// Expansion (scatter back, part 2): the compaction read the other way. d_packed holds
// exactly count values, count being the number of positive elements of d_in[0..n); they are
// arbitrary floats (not d_in's). For every i in [0, n): if d_in[i] is positive, d_out[i] =
// d_packed[r], r being the number of positive elements of d_in[0..i) (before i, not counting
// i); otherwise d_out[i] = +0.0f. Values are moved bit for bit, as in the split. Nothing at or
// past d_out + n is written, and nothing at or past d_packed + count is read.
extern "C" void expand_positive(const float* d_in, const float* d_packed, size_t n, float* d_out,
                                cudaStream_t stream);

// For all three: n may be anything from 0 to 2^30. d_out overlaps neither d_in nor d_packed,
// and all three are 16-byte aligned (as cudaMalloc returns them). Do not modify d_in or
// d_packed.
//
// Enqueue all work on `stream`; the functions may return before the work finishes. They may
// use temporary device memory that they allocate themselves: cudaMallocAsync/cudaFreeAsync
// on `stream` each call, or a buffer allocated once and kept between calls (then calls must
// not overlap in time, which the grader never does).
