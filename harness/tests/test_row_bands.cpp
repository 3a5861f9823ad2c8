// The bands of rows the lab 12 part-2 hints describe (labkit/row_bands.h): every row in exactly
// one band, in order, with MPI's counts and displacements in floats.
#include "labkit/row_bands.h"

#include <doctest/doctest.h>

TEST_SUITE("row bands") {
  TEST_CASE("an uneven split: the last rank takes the remainder, displacements are running sums") {
    const labkit::RowBands bands = labkit::row_bands(7, 2, 8);  // n = 7: rows of n + 1 floats
    CHECK(bands.first_row == std::vector<int>{0, 4});
    CHECK(bands.rows == std::vector<int>{4, 3});
    CHECK(bands.counts == std::vector<int>{32, 24});
    CHECK(bands.displacements == std::vector<int>{0, 32});  // not 1 x 24, the starter's mistake
    CHECK(labkit::braced(bands.counts) == "{32, 24}");
  }

  TEST_CASE("fewer rows than ranks: the last ranks get nothing, at the end") {
    const labkit::RowBands bands = labkit::row_bands(1, 2, 2);
    CHECK(bands.rows == std::vector<int>{1, 0});
    CHECK(bands.counts == std::vector<int>{2, 0});
    CHECK(bands.displacements == std::vector<int>{0, 2});
  }

  TEST_CASE("every row is in exactly one band, for any split") {
    for (int rows = 1; rows <= 70; ++rows)
      for (int ranks = 1; ranks <= 9; ++ranks) {
        CAPTURE(rows);
        CAPTURE(ranks);
        const labkit::RowBands bands = labkit::row_bands(rows, ranks, rows + 1);
        int next = 0;
        for (int r = 0; r < ranks; ++r) {
          CHECK(bands.first_row[r] == std::min(next, rows));
          CHECK(bands.rows[r] >= 0);
          CHECK(bands.displacements[r] == next * (rows + 1));
          next += bands.rows[r];
        }
        CHECK(next == rows);
      }
  }
}
