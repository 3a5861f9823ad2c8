// The CPU test of the rank protocol (test_rank_group_mpi.cpp): what its submission does on
// each call, after an MPI sum of the ranks' values that it checks itself.
#pragma once

enum RankTestBehaviour : int {
  rank_test_answer = 0,       // return
  rank_test_hang = 1,         // rank 0 never returns
  rank_test_crash = 2,        // rank 1 aborts
  rank_test_break_out = 3,    // abort if the kit's files can be read, or /tmp written
  rank_test_find_secret = 4,  // abort if the grader's secret or result token is in the environment
  rank_test_throw = 5,        // rank 0 throws; rank 1 then waits in a barrier for ever
};
