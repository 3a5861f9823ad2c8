// Lab 13, part 2: one rank of the grader's MPI job. The checks (test_allreduce.cu) start it
// under mpirun, one rank per GPU; each rank runs your mpi_allreduce in a sandbox and answers
// the checks, which read the result from memory they own (labkit/rank_group.h). Started with
// --launch, the same program is the sandboxed launcher that becomes mpirun.
#include "mpi_allreduce.h"

#include <labkit/rank_main.h>

#include <mpi.h>

#include <stdexcept>

#if LABKIT_HAVE_NCCL
#include <nccl.h>
#endif

namespace {

// NCCL, where the kit was built with it, loads with this program (a call keeps the linker
// from dropping it): before the rank's sandbox closes, which keeps the CUDA toolkit's folder
// shut, and for the submission's module, which uses it without linking it.
void load_nccl() {
#if LABKIT_HAVE_NCCL
  int version = 0;
  ncclGetVersion(&version);
#endif
}

// The contract as the ranks call it: the buffer and its length come from the checks, the
// communicator is this job's MPI_COMM_WORLD (a communicator cannot cross the wire).
void call_mpi_allreduce(void* symbol, const labkit::wire::Request& request, const labkit::HostMappings& mappings,
                        cudaStream_t stream) {
  if (request.argument_count != 2) throw std::invalid_argument("mpi_allreduce takes a buffer and a count");
  auto* function = reinterpret_cast<decltype(&mpi_allreduce)>(symbol);
  function(labkit::decode_argument<float*>(request.arguments[0], mappings, stream),
           labkit::decode_argument<std::size_t>(request.arguments[1], mappings, stream), MPI_COMM_WORLD, stream);
}

}  // namespace

int main(int argc, char** argv) {
  if (!labkit::launching(argc, argv)) load_nccl();
  return labkit::rank_main(argc, argv, "mpi_allreduce", call_mpi_allreduce);
}
