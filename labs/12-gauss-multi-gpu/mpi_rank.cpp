// Lab 12, part 2: one rank of the grader's MPI job. The checks (test_gauss.cu) start it under
// mpirun, one rank per GPU; each rank runs your mpi_gauss_solve in a sandbox and answers the
// checks, which read x from memory they own (labkit/rank_group.h). Started with --launch, the
// same program is the sandboxed launcher that becomes mpirun.
#include "mpi_gauss.h"

#include <labkit/rank_main.h>

#include <mpi.h>

#include <stdexcept>

namespace {

// The contract as the ranks call it: A, b and x (null pointers on every rank but the root)
// and n come from the checks; the communicator is this job's MPI_COMM_WORLD (a communicator
// cannot cross the wire).
void call_mpi_gauss_solve(void* symbol, const labkit::wire::Request& request, const labkit::HostMappings& mappings,
                          cudaStream_t stream) {
  if (request.argument_count != 4) throw std::invalid_argument("mpi_gauss_solve takes A, b, x and n");
  auto* function = reinterpret_cast<decltype(&mpi_gauss_solve)>(symbol);
  function(labkit::decode_argument<const float*>(request.arguments[0], mappings, stream),
           labkit::decode_argument<const float*>(request.arguments[1], mappings, stream),
           labkit::decode_argument<float*>(request.arguments[2], mappings, stream),
           labkit::decode_argument<int>(request.arguments[3], mappings, stream), MPI_COMM_WORLD, stream);
}

}  // namespace

int main(int argc, char** argv) {
  return labkit::rank_main(argc, argv, "mpi_gauss_solve", call_mpi_gauss_solve);
}
