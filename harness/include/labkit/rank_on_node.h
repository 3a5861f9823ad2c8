// Which GPU an MPI rank uses: its number among the ranks of its node (the chapter's
// MPI_Comm_split_type with MPI_COMM_TYPE_SHARED). Shared by the labs' rank programs and
// self-checks (labs 12 and 13, part 2).
#pragma once

#include <mpi.h>

namespace labkit {

inline int rank_on_node() {
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int rank = 0;
  MPI_Comm_rank(node, &rank);
  MPI_Comm_free(&node);
  return rank;
}

}  // namespace labkit
