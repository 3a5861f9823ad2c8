// How MPI_Scatterv and MPI_Gatherv split the rows of a matrix over ranks in consecutive bands,
// the chapter's way (lab 12, part 2): ceil(rows / ranks) rows each, the last ranks fewer, or
// none when there are fewer rows than ranks. The checks name it in their hints; the counts and
// displacements are what a correct call passes to MPI, in floats.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

namespace labkit {

struct RowBands {
  std::vector<int> first_row, rows;        // per rank, in rows
  std::vector<int> counts, displacements;  // per rank, in floats: rows x row_floats, and their running sum
};

inline RowBands row_bands(int rows, int ranks, int row_floats) {
  RowBands bands;
  const int share = (rows + ranks - 1) / ranks;
  for (int r = 0; r < ranks; ++r) {
    const int first = std::min(rows, r * share);
    bands.first_row.push_back(first);
    bands.rows.push_back(std::min(rows, first + share) - first);
    bands.counts.push_back(bands.rows.back() * row_floats);
    bands.displacements.push_back(first * row_floats);  // the sum of the counts before it
  }
  return bands;
}

// "{32, 24}"
inline std::string braced(const std::vector<int>& values) {
  std::string text = "{";
  for (size_t i = 0; i < values.size(); ++i) text += (i ? ", " : "") + std::to_string(values[i]);
  return text + "}";
}

}  // namespace labkit
