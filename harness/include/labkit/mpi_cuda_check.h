// For the labs' MPI self-check programs (labs 12 and 13, part 2): a failed CUDA call ends the
// whole job with its message, since a rank that returned alone would leave its peers waiting
// in their next collective.
#pragma once

#include <cuda_runtime.h>
#include <mpi.h>

#include <cstdio>

#define MPI_CUDA_CHECK(call)                                                                    \
  do {                                                                                          \
    const cudaError_t status_ = (call);                                                         \
    if (status_ != cudaSuccess) {                                                               \
      std::fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,                 \
                   cudaGetErrorString(status_));                                                \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                             \
    }                                                                                           \
  } while (0)
