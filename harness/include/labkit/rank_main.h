// The whole main of a rank program (labs 12 and 13, part 2; the kit's CPU test of the rank
// protocol): started with --launch, the sandboxed launcher that becomes mpirun; under mpirun,
// one rank that starts MPI, takes its GPU and serves the one contract function until the
// checks end the job (labkit/rank_host.h). Header only: it needs MPI, which the rank host's
// library does not.
#pragma once

#include "labkit/rank_host.h"
#include "labkit/rank_on_node.h"

#include <mpi.h>

#include <cstdlib>

namespace labkit {

// The GPU a rank uses: its number among the ranks of its node, or none (the CPU test).
enum class RankDevice { rank_on_node, none };

inline int rank_main(int argc, char** argv, const char* function, const RankInvoke& invoke,
                     RankDevice device = RankDevice::rank_on_node) {
  if (launching(argc, argv)) return launch_in_sandbox(argc, argv);
  MPI_Init(&argc, &argv);
  RankHostOptions options = parse_rank_arguments(argc, argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &options.rank);
  options.device = device == RankDevice::rank_on_node ? rank_on_node() : -1;
  // No MPI_Finalize: the checks end the job by killing it, and a rank whose peer has gone
  // would wait in it for ever.
  std::_Exit(serve_rank(options, function, invoke));
}

}  // namespace labkit
