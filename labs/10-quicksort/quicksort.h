// Lab 10 contract. Do not edit: the grader compiles your quicksort.cu against its own copy.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

// The two-phase temporary storage of CUB's device-wide algorithms, split into two functions.
//
// quicksort_temp_bytes(n): how many bytes of temporary device memory quicksort needs for n
// keys. Host code only: it runs no kernel, and may return 0. It must not ask for more than
// 8 x n + 64 MiB bytes (8 bytes per key plus 64 MiB); the grader refuses larger requests.
extern "C" size_t quicksort_temp_bytes(size_t n);

// quicksort: sorts d_keys[0..n) in place, ascending as unsigned 32-bit integers (the order
// std::sort gives a std::vector<uint32_t>). n may be anything from 0 to 2^26. When the work
// finishes, d_keys[0..n) holds the same keys as before (the same multiset), in order. Write
// nothing outside d_keys[0..n) and d_temp[0..temp_bytes).
//
// d_temp points to temp_bytes >= quicksort_temp_bytes(n) bytes of device memory that the
// function may use as it likes. It holds garbage on entry (the grader fills it with 0xA5
// bytes), so anything that must start at zero has to be cleared by the function itself, on
// `stream`. d_keys and d_temp are 256-byte aligned and do not overlap.
//
// Enqueue all work on `stream`; the function may return before the work finishes. Kernels
// launched from the device (dynamic parallelism) belong to the grid that launched them: a
// grid is complete only when all of its children are, so work launched from a kernel on
// `stream` is finished when `stream` is. The function may also allocate temporary memory of
// its own (cudaMallocAsync/cudaFreeAsync on `stream`, or a buffer kept between calls; the
// grader never runs two calls at once), and may raise the device runtime's limits
// (cudaDeviceSetLimit(cudaLimitDevRuntimePendingLaunchCount, ...)).
//
// The module is compiled with -rdc=true and linked with cudadevrt (lab.yaml, `build:`), so
// kernels may launch kernels.
extern "C" void quicksort(uint32_t* d_keys, size_t n, void* d_temp, size_t temp_bytes, cudaStream_t stream);
