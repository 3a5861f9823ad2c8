// Lab 12 contract. Do not edit: the grader compiles your gauss.cu and peer_copy.cu against its own copy.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

// Solves A x = b in FP32 by Gaussian elimination, with the rows of A split over GPUs
// 0 .. gpus-1.
//
// - d_a: A, n x n, row-major (element (i, j) at d_a[i * n + j]), on device 0. Strictly
//   diagonally dominant by rows (|a_ii| > sum of |a_ij| over j != i), so no pivoting is
//   needed: every diagonal element stays the largest of its row as elimination proceeds.
// - d_b: b, n elements, on device 0.
// - d_x: x, n elements, on device 0: written by the call. Whatever it held before must not
//   matter.
// - gpus: how many GPUs to use, 1 .. the number of devices the process sees. gpus = 1 means
//   device 0 alone. The grader calls with 1 and 2.
// d_a and d_b are inputs: they must come back unchanged (copy A into your own memory).
// The work may be put on streams of your own on every GPU, but the result must be complete
// when the work the call enqueued has finished; the grader waits for every device.
// Nothing is kept between calls except what you cache yourself.
extern "C" void gauss_solve(const float* d_a, const float* d_b, float* d_x, int n, int gpus, cudaStream_t stream);

// Part 3, measuring the machine (in peer_copy.cu): the time of one cudaMemcpyPeerAsync of
// `bytes` from GPU `from` to GPU `to`, in microseconds: the median of `repeats` copies, each
// one finished on both GPUs before the clock stops, after a few copies that are not counted
// (the first one sets up the path). The buffers are the call's own (cudaMalloc).
// - peer_access = 1: with peer access enabled between the two GPUs, both ways, so the copy
//   goes from GPU to GPU directly; 0: with it disabled both ways, so the driver stages the
//   same copy through host memory. The checks call it only where cudaDeviceCanAccessPeer
//   allows peer access.
// - Leave peer access as you found it: your gauss_solve, in the same process, may rely on it.
extern "C" double time_peer_copy(int from, int to, int peer_access, size_t bytes, int repeats);
