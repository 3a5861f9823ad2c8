// Calibration submission for the grading policy: lab 13, part 2, "the chapter's technique done
// right". Unchanged from the starter apart from this comment.
//
// The starter has no planted mistake, only the chapter's limit: with an MPI that is not
// CUDA-aware (the kit's Open MPI is not), the chapter's way to hand GPU data to MPI is to copy
// it to host memory first and back afterwards ("没有 CUDA-aware MPI,开发人员只能将指向
// CPU/主机内存的指针传递给 MPI 调用": cudaMemcpy to a host buffer, the MPI call, cudaMemcpy
// back). The starter does exactly that, right: pinned staging kept between calls and grown
// with n, the device-to-host copy synchronised before MPI reads the host copy, MPI_Allreduce
// in place in pieces of at most INT_MAX elements, the copy back queued on the caller's stream.
// Not used: NCCL bootstrapped over MPI (ncclGetUniqueId, MPI_Bcast of the id,
// ncclCommInitRank), which the reference does; the seed names ncclCommInitRank for several
// processes in one sentence, so this is the one judgement call of this file (see the README).
// Follows seed 004_39f2774132d9005b.txt, "CUDA-aware MPI" (the non-CUDA-aware example with
// host buffers); lab README, "Part 2: one process per GPU, with MPI".
#include "mpi_allreduce.h"

#include <algorithm>
#include <climits>

namespace {

// Pinned, so the copies run at full PCIe speed; kept between calls and grown when n grows.
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
  cudaStreamSynchronize(stream);  // MPI reads the host copy: it must have landed
  // MPI counts are ints: reduce in pieces of at most INT_MAX elements.
  for (size_t done = 0; done < n;) {
    const size_t count = std::min(n - done, size_t(INT_MAX));
    MPI_Allreduce(MPI_IN_PLACE, host + done, int(count), MPI_FLOAT, MPI_SUM, comm);
    done += count;
  }
  cudaMemcpyAsync(d_data, host, n * sizeof(float), cudaMemcpyHostToDevice, stream);
}
