// Lab 12, part 2: the self-check for mpi_gauss_solve, one process per GPU. Not the grader:
// `./grade lab 12` runs part 2 in sandboxed ranks of its own (mpi_rank.cpp); this program runs
// the checks in the same processes as your code, to try things by hand.
//
//   mpirun --allow-run-as-root -np 2 build/labs/lab-12-gauss-multi-gpu-mpi
//
// Rank r uses GPU r of its node. Rank 0 makes a strictly diagonally dominant system for each
// size, every rank calls mpi_gauss_solve, and rank 0 checks the scaled residual
// ||b - A x|| / (||A|| ||x|| + ||b||) in double; sizes that are not multiples of the ranks come
// first. Then each timed size prints the median of 5 calls by rank 0's clock (from the call to
// the end of the work on every rank). Exit status 0 when every size was solved.
#include "mpi_gauss.h"

#include <labkit/mpi_cuda_check.h>
#include <labkit/rank_on_node.h>

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

struct System {
  int n = 0;
  std::vector<float> a, b;
};

// Off-diagonals in [-1, 1] from a fixed hash, each diagonal 1.5 x its row's other magnitudes + 1.
System make_system(int n) {
  System s{n, std::vector<float>(size_t(n) * n), std::vector<float>(size_t(n))};
  for (size_t i = 0; i < size_t(n); ++i) {
    double off_diagonal = 0, sum = 0;
    for (size_t j = 0; j < size_t(n); ++j) {
      const unsigned long long mixed = (i * 2654435761ull + j * 40503ull + 12345) % 2001;
      s.a[i * n + j] = float(int(mixed) - 1000) / 1000.0f;
      if (j != i) off_diagonal += std::fabs(s.a[i * n + j]);
    }
    s.a[i * n + i] = float(1.5 * off_diagonal + 1);
    for (size_t j = 0; j < size_t(n); ++j) sum += s.a[i * n + j] * (j % 2 ? -0.5 : 0.75);
    s.b[i] = float(sum);
  }
  return s;
}

double scaled_residual(const System& s, const std::vector<float>& x) {
  double residual = 0, a_norm = 0, x_norm = 0, b_norm = 0;
  for (size_t i = 0; i < size_t(s.n); ++i) {
    double sum = 0, norm = 0;
    for (size_t j = 0; j < size_t(s.n); ++j) sum += double(s.a[i * s.n + j]) * x[j], norm += std::fabs(s.a[i * s.n + j]);
    residual = std::max(residual, std::fabs(s.b[i] - sum));
    a_norm = std::max(a_norm, norm);
    x_norm = std::max(x_norm, std::fabs(double(x[i])));
    b_norm = std::max(b_norm, std::fabs(double(s.b[i])));
  }
  return residual / (a_norm * x_norm + b_norm);
}

// Device copies of the system on the root; null pointers elsewhere, as the contract says.
struct DeviceSystem {
  float *a = nullptr, *b = nullptr, *x = nullptr;
  DeviceSystem(const System& s, bool root) {
    if (!root) return;
    MPI_CUDA_CHECK(cudaMalloc(&a, s.a.size() * sizeof(float)));
    MPI_CUDA_CHECK(cudaMalloc(&b, s.b.size() * sizeof(float)));
    MPI_CUDA_CHECK(cudaMalloc(&x, s.b.size() * sizeof(float)));
    MPI_CUDA_CHECK(cudaMemcpy(a, s.a.data(), s.a.size() * sizeof(float), cudaMemcpyHostToDevice));
    MPI_CUDA_CHECK(cudaMemcpy(b, s.b.data(), s.b.size() * sizeof(float), cudaMemcpyHostToDevice));
  }
  ~DeviceSystem() { cudaFree(a), cudaFree(b), cudaFree(x); }
};

// One call on every rank, until every rank's GPU is done; returns rank 0's seconds.
double solve(DeviceSystem& d, int n, cudaStream_t stream) {
  MPI_Barrier(MPI_COMM_WORLD);
  const double start = MPI_Wtime();
  mpi_gauss_solve(d.a, d.b, d.x, n, MPI_COMM_WORLD, stream);
  MPI_CUDA_CHECK(cudaDeviceSynchronize());
  MPI_CUDA_CHECK(cudaGetLastError());
  MPI_Barrier(MPI_COMM_WORLD);
  return MPI_Wtime() - start;
}

bool check_size(int rank, int n, cudaStream_t stream) {
  const System s = rank == 0 ? make_system(n) : System{n, {}, {}};
  DeviceSystem d(s, rank == 0);
  if (rank == 0) MPI_CUDA_CHECK(cudaMemset(d.x, 0xA5, size_t(n) * sizeof(float)));
  solve(d, n, stream);
  int right = 1;
  if (rank == 0) {
    std::vector<float> x(static_cast<size_t>(n));
    MPI_CUDA_CHECK(cudaMemcpy(x.data(), d.x, x.size() * sizeof(float), cudaMemcpyDeviceToHost));
    const double residual = scaled_residual(s, x), bound = 50 * std::sqrt(double(n)) * 1.1920928955078125e-7;
    right = residual <= bound;
    std::printf("check n = %-6d residual %.3g (bound %.3g)  %s\n", n, residual, bound, right ? "right" : "WRONG");
  }
  MPI_Bcast(&right, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return right != 0;
}

void time_size(int rank, int n, cudaStream_t stream) {
  const System s = rank == 0 ? make_system(n) : System{n, {}, {}};
  DeviceSystem d(s, rank == 0);
  std::vector<double> seconds;
  for (int call = -1; call < 5; ++call) {  // one warm-up call
    const double t = solve(d, n, stream);
    if (call >= 0) seconds.push_back(t);
  }
  std::sort(seconds.begin(), seconds.end());
  if (rank == 0) std::printf("n = %-6d %9.2f ms (median of 5)\n", n, seconds[2] * 1e3);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, ranks = 1, devices = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  MPI_CUDA_CHECK(cudaGetDeviceCount(&devices));
  MPI_CUDA_CHECK(cudaSetDevice(labkit::rank_on_node() % std::max(devices, 1)));
  cudaStream_t stream = nullptr;
  MPI_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  if (rank == 0) std::printf("%d ranks, rank r on GPU r of its node\n", ranks);

  bool all_right = true;
  for (int n : {1, 7, 65, 1001, 2048, 4099}) all_right = check_size(rank, n, stream) && all_right;
  for (int n : {8192, 12288}) time_size(rank, n, stream);
  MPI_CUDA_CHECK(cudaStreamDestroy(stream));
  MPI_Finalize();
  return all_right ? 0 : 1;
}
