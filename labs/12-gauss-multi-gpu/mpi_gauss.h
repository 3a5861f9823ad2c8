// Lab 12, part 2 contract: one process per GPU, started by mpirun. Do not edit: the grader's
// rank program (mpi_rank.cpp) and the self-check (mpi_main.cpp) call your function through it,
// the grader with its own copy.
#pragma once

#include <cuda_runtime.h>
#include <mpi.h>

// Solves A x = b in FP32 by Gaussian elimination over the ranks of `comm`, each rank on its own
// GPU (the current device when it is called). Every rank of `comm` calls it with the same n.
//
// - Rank 0, the root, holds the system and receives the answer, all on its GPU:
//   d_a: A, n x n, row-major (a_ij at d_a[i * n + j]), strictly diagonally dominant by rows, so
//   no pivoting is needed; d_b: b, n floats; d_x: x, n floats, written by the call (whatever it
//   held before must not matter). d_a and d_b are inputs: they must come back unchanged.
// - Every other rank gets d_a = d_b = d_x = nullptr: what it works on, it receives from the root
//   through MPI, and what the root needs back, it sends.
// - n >= 1, and it need not be a multiple of the number of ranks; it may be smaller.
// - stream: a stream of this rank's GPU. The caller waits for all of its GPU's work before it
//   reads d_x, so GPU work may still be queued on return; MPI calls must be complete.
// - This MPI is not CUDA-aware: never hand a device pointer to an MPI call.
// Nothing is kept between calls except what you cache yourself (buffers, streams).
extern "C" void mpi_gauss_solve(const float* d_a, const float* d_b, float* d_x, int n, MPI_Comm comm,
                                cudaStream_t stream);
