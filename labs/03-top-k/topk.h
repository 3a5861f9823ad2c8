// Lab 03 contract. Do not edit: the grader compiles your topk.cu and topk_managed.cu against
// its own copy.
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

// ---- Part 2, unified memory (in topk_managed.cu) ------------------------------------------

// The same top-k, with the same output rules, of an input in CUDA managed memory: managed_in
// comes from cudaMallocManaged, and its pages are in host memory when the call starts (the CPU
// wrote the input last), as they are in a program that fills its input on the CPU. Make the
// first GPU access cheap: you may prefetch the input (cudaMemPrefetchAsync) and advise the
// driver about it (cudaMemAdvise), on `stream`. Every call gets managed memory of its own,
// with no advice or prefetch left from an earlier call; leave the input's contents unchanged.
// d_out is device memory, as in topk. You may call your topk.
extern "C" void topk_managed(const int32_t* managed_in, size_t n, int k, int32_t* d_out, cudaStream_t stream);
