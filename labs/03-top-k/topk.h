// Lab 03 contract. Do not edit: the grader compiles your topk.cu against its own copy.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

// Writes the k largest values of d_in[0..n) to d_out[0..k), largest first. Equal values
// count separately, exactly as std::partial_sort with std::greater would leave them:
// {7, 3, 7, 1} with k = 2 gives {7, 7}. Requires 1 <= k <= n; any int32 value may occur,
// INT_MIN and INT_MAX included. d_in is not modified. Enqueue all work on `stream`; temporary
// device memory may be a buffer kept between calls, or come from cudaMallocAsync on it, freed
// with cudaFreeAsync before returning (the pool gives it back to the driver at every
// synchronisation, and the grader synchronises after every call, so that costs an allocation
// each time); the function may return before the work finishes.
extern "C" void topk(const int32_t* d_in, size_t n, int k, int32_t* d_out, cudaStream_t stream);
