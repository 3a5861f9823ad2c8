// The submission of the CPU test of the rank protocol: an MPI sum on the host, checked here
// (a wrong sum aborts), then what the test asks of it (rank_test.h).
#include "rank_test.h"

#include <mpi.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>

namespace {

bool can_open(const char* path, const char* mode) {
  std::FILE* file = std::fopen(path, mode);
  if (file != nullptr) std::fclose(file);
  return file != nullptr;
}

}  // namespace

extern "C" void rank_test(int value, int expected_sum, int behaviour, MPI_Comm comm) {
  int sum = 0, rank = 0;
  MPI_Allreduce(&value, &sum, 1, MPI_INT, MPI_SUM, comm);
  MPI_Comm_rank(comm, &rank);
  if (sum != expected_sum) std::abort();
  if (behaviour == rank_test_hang && rank == 0)
    for (;;) pause();
  if (behaviour == rank_test_crash && rank == 1) std::abort();
  if (behaviour == rank_test_break_out &&
      (can_open(LABKIT_TEST_SOURCE_ROOT "/README.md", "r") || can_open("/tmp/labkit-rank-test-escape", "w")))
    std::abort();
  if (behaviour == rank_test_find_secret && (std::getenv("LABKIT_SECRET") || std::getenv("LABKIT_RESULT_TOKEN")))
    std::abort();
  if (behaviour == rank_test_throw) {
    if (rank == 0) throw std::runtime_error("rank 0 gave up");
    MPI_Barrier(comm);
  }
}
