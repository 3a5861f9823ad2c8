// Lab 10's own input pattern, `pattern: organ_pipe` in its dataset: the generated keys laid out
// ascending, then descending. The checks (test_quicksort.cu) and the benchmark
// (bench_quicksort.cu) draw it the same way.
#pragma once

#include <labkit/dataset.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace organ_pipe {

inline bool wanted(const labkit::Case& c) { return c.has("pattern") && c.params.at("pattern") == "organ_pipe"; }

// Ascending keys at the front, then descending: the largest key lands at the middle of the
// array (one place right of the middle index when n is even), and a middle-key partition
// finds the largest or second-largest key of every segment it makes at the middle index.
inline std::vector<uint32_t> arrange(std::vector<uint32_t> keys) {
  std::sort(keys.begin(), keys.end());
  std::vector<uint32_t> pipe;
  pipe.reserve(keys.size());
  for (size_t i = 0; i < keys.size(); i += 2) pipe.push_back(keys[i]);
  for (size_t i = keys.size() - (keys.size() % 2 == 0 ? 1 : 2); i < keys.size(); i -= 2) pipe.push_back(keys[i]);
  return pipe;
}

}  // namespace organ_pipe
