// Lab 13, part 2: the self-check for mpi_allreduce, one process per GPU. Not the grader:
// `./grade lab 13` runs part 2 in sandboxed ranks of its own (mpi_rank.cpp); this program runs
// the checks in the same processes as your code, to try things by hand.
//
//   mpirun --allow-run-as-root -np 2 build/labs/lab-13-allreduce-mpi
//
// Rank r uses GPU r (of its node). Every rank fills its array with values whose sum over the
// ranks is exact in float, calls mpi_allreduce, and checks every element; then each size is
// timed (the slowest rank's time, median of 20 calls) and its bus bandwidth printed. Exit
// status 0 when every check passed on every rank.
#include "mpi_allreduce.h"
#include <labkit/mpi_cuda_check.h>
#include <labkit/rank_on_node.h>

#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

// Rank r's value at index i: k/8 with |k| <= 1000, so a sum over up to 2^14 ranks is exact.
float value_at(int rank, size_t i) {
  const unsigned long long mixed = (i + 1) * 2654435761ull + unsigned(rank) * 40503ull;
  return float(int(mixed % 2001) - 1000) * 0.125f;
}


struct Rank {
  int rank = 0;
  int size = 1;
  cudaStream_t stream = nullptr;
};

// Whether every rank got the exact sum; each rank checks its own array.
bool check_size(const Rank& me, size_t n) {
  std::vector<float> host(n);
  for (size_t i = 0; i < n; ++i) host[i] = value_at(me.rank, i);
  float* d_data = nullptr;
  MPI_CUDA_CHECK(cudaMalloc(&d_data, std::max<size_t>(n, 1) * sizeof(float)));
  MPI_CUDA_CHECK(cudaMemcpy(d_data, host.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  mpi_allreduce(d_data, n, MPI_COMM_WORLD, me.stream);
  MPI_CUDA_CHECK(cudaStreamSynchronize(me.stream));
  MPI_CUDA_CHECK(cudaGetLastError());
  MPI_CUDA_CHECK(cudaMemcpy(host.data(), d_data, n * sizeof(float), cudaMemcpyDeviceToHost));
  MPI_CUDA_CHECK(cudaFree(d_data));

  long long wrong = 0, first_wrong = -1;
  for (size_t i = 0; i < n; ++i) {
    double sum = 0;
    for (int r = 0; r < me.size; ++r) sum += value_at(r, i);
    if (host[i] != float(sum)) {
      if (first_wrong < 0) first_wrong = (long long)i;
      ++wrong;
    }
  }
  if (wrong > 0)
    std::printf("rank %d, n = %zu: %lld elements wrong, the first at index %lld\n", me.rank, n, wrong, first_wrong);
  long long wrong_anywhere = 0;
  MPI_Allreduce(&wrong, &wrong_anywhere, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  return wrong_anywhere == 0;
}

// Median over `calls` of the slowest rank's time for one call, in ms. The values are not
// restored between calls (they grow by a factor of `size` per call, far from overflow).
double time_size(const Rank& me, size_t n, int calls) {
  float* d_data = nullptr;
  MPI_CUDA_CHECK(cudaMalloc(&d_data, n * sizeof(float)));
  MPI_CUDA_CHECK(cudaMemset(d_data, 0, n * sizeof(float)));
  std::vector<double> slowest;
  for (int call = -3; call < calls; ++call) {  // three warm-up calls
    MPI_Barrier(MPI_COMM_WORLD);
    const double start = MPI_Wtime();
    mpi_allreduce(d_data, n, MPI_COMM_WORLD, me.stream);
    MPI_CUDA_CHECK(cudaStreamSynchronize(me.stream));
    const double mine = (MPI_Wtime() - start) * 1e3;
    double worst = 0;
    MPI_Allreduce(&mine, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (call >= 0) slowest.push_back(worst);
  }
  MPI_CUDA_CHECK(cudaFree(d_data));
  std::sort(slowest.begin(), slowest.end());
  return slowest[slowest.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  setenv("NCCL_NVLS_ENABLE", "0", 1);  // never NVLink multicast on the kit's machines
  MPI_Init(&argc, &argv);
  Rank me;
  MPI_Comm_rank(MPI_COMM_WORLD, &me.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &me.size);
  int devices = 0;
  MPI_CUDA_CHECK(cudaGetDeviceCount(&devices));
  const int device = labkit::rank_on_node() % std::max(devices, 1);
  MPI_CUDA_CHECK(cudaSetDevice(device));
  MPI_CUDA_CHECK(cudaStreamCreateWithFlags(&me.stream, cudaStreamNonBlocking));
  if (me.rank == 0) std::printf("%d ranks, rank r on GPU r of its node\n", me.size);

  bool all_right = true;
  for (size_t n : {size_t(1), size_t(3), size_t(1000003), size_t(4) << 20}) {
    const bool right = check_size(me, n);
    all_right = all_right && right;
    if (me.rank == 0) std::printf("check n = %-9zu %s\n", n, right ? "right" : "WRONG");
  }
  for (size_t n : {size_t(4) << 20, size_t(64) << 20}) {
    const double ms = time_size(me, n, 20);
    const double bus_bytes = 2.0 * (me.size - 1) / me.size * double(n) * sizeof(float);
    if (me.rank == 0)
      std::printf("%4zu MiB per rank: %8.3f ms  bus bandwidth %7.1f GB/s\n", n * sizeof(float) >> 20, ms,
                  bus_bytes / (ms * 1e-3) / 1e9);
  }
  MPI_CUDA_CHECK(cudaStreamDestroy(me.stream));
  MPI_Finalize();
  return all_right ? 0 : 1;
}
