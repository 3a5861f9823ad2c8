// Which GPU an MPI rank uses: its number among the ranks of its node. Shared by the self-check
// (mpi_main.cpp) and the grader's rank program (mpi_rank.cpp).
#pragma once

#include <mpi.h>

inline int rank_on_node() {
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int rank = 0;
  MPI_Comm_rank(node, &rank);
  MPI_Comm_free(&node);
  return rank;
}
