// Lab 13, part 2 reference: NCCL over an MPI bootstrap. MPI carries only NCCL's unique id
// (128 bytes, from rank 0 to all) once; after that NCCL moves the data GPU to GPU over NVLink
// with its ring, and MPI never sees a device pointer (this MPI is not CUDA-aware). Where
// nccl.h is missing it falls back to the host-staged all-reduce of the starter. (The header
// decides, not a build flag: the grader compiles this file as it compiles a student's.)
#include "mpi_allreduce.h"

#include <algorithm>
#include <climits>

#if __has_include(<nccl.h>)
#include <nccl.h>

#include <stdexcept>
#include <string>

namespace {

// A failed NCCL call says so (the grader shows the message) instead of leaving the data as
// it was, which would read as a wrong sum.
void nccl_check(ncclResult_t result, const char* call, ncclComm_t comm = nullptr) {
  if (result != ncclSuccess)
    throw std::runtime_error(std::string(call) + " failed: " + ncclGetErrorString(result) + ": " +
                             ncclGetLastError(comm) + " (NCCL_DEBUG=WARN says more)");
}

// One NCCL communicator per process, made on first use for `comm`'s ranks.
ncclComm_t nccl_communicator(MPI_Comm comm) {
  static ncclComm_t nccl = nullptr;
  if (nccl != nullptr) return nccl;
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  ncclUniqueId id{};
  if (rank == 0) nccl_check(ncclGetUniqueId(&id), "ncclGetUniqueId");
  MPI_Bcast(&id, int(sizeof(id)), MPI_BYTE, 0, comm);  // host memory: fine for any MPI
  nccl_check(ncclCommInitRank(&nccl, size, id, rank), "ncclCommInitRank");
  return nccl;
}

}  // namespace

extern "C" void mpi_allreduce(float* d_data, size_t n, MPI_Comm comm, cudaStream_t stream) {
  if (n == 0) return;
  ncclComm_t nccl = nccl_communicator(comm);
  nccl_check(ncclAllReduce(d_data, d_data, n, ncclFloat, ncclSum, nccl, stream), "ncclAllReduce", nccl);
}

#else

namespace {

float* staging_for(size_t n) {
  static float* host = nullptr;
  static size_t capacity = 0;
  if (n > capacity) {
    cudaFreeHost(host);
    cudaMallocHost(&host, n * sizeof(float));
    capacity = n;
  }
  return host;
}

}  // namespace

extern "C" void mpi_allreduce(float* d_data, size_t n, MPI_Comm comm, cudaStream_t stream) {
  if (n == 0) return;
  float* host = staging_for(n);
  cudaMemcpyAsync(host, d_data, n * sizeof(float), cudaMemcpyDeviceToHost, stream);
  cudaStreamSynchronize(stream);
  for (size_t done = 0; done < n;) {
    const size_t count = std::min(n - done, size_t(INT_MAX));
    MPI_Allreduce(MPI_IN_PLACE, host + done, int(count), MPI_FLOAT, MPI_SUM, comm);
    done += count;
  }
  cudaMemcpyAsync(d_data, host, n * sizeof(float), cudaMemcpyHostToDevice, stream);
}

#endif
