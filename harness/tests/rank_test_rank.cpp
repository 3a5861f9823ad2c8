// The rank program of the CPU test of the rank protocol: labkit/rank_host.h with no GPU.
#include "rank_test.h"

#include "labkit/rank_main.h"

#include <mpi.h>

namespace {

void call_rank_test(void* symbol, const labkit::wire::Request& request, const labkit::HostMappings& mappings,
                    cudaStream_t stream) {
  using Function = void (*)(int, int, int, MPI_Comm);
  reinterpret_cast<Function>(symbol)(labkit::decode_argument<int>(request.arguments[0], mappings, stream),
                                     labkit::decode_argument<int>(request.arguments[1], mappings, stream),
                                     labkit::decode_argument<int>(request.arguments[2], mappings, stream),
                                     MPI_COMM_WORLD);
}

}  // namespace

int main(int argc, char** argv) {
  return labkit::rank_main(argc, argv, "rank_test", call_rank_test, labkit::RankDevice::none);
}
