// Lab 13, part 2 contract: one process per GPU, started by mpirun. Do not edit: the grader's
// rank program (mpi_rank.cpp) and the self-check (mpi_main.cpp) call your function through it,
// the grader with its own copy.
#pragma once

#include <cuda_runtime.h>
#include <mpi.h>

#include <cstddef>

// In-place sum all-reduce of `n` floats over the ranks of `comm`. Each rank passes its own
// d_data, which lives on its GPU (the current device). `stream` is a stream of that GPU; the
// caller synchronises it before reading d_data, so the work may still be queued on return.
// This MPI is not CUDA-aware: never hand a device pointer to an MPI call.
extern "C" void mpi_allreduce(float* d_data, size_t n, MPI_Comm comm, cudaStream_t stream);
