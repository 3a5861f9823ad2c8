// A lab's cases as data: datasets/NN-name.yaml lists correctness and performance cases
// with their sizes, input distributions and seeds; hidden cases are instructor-only. Its
// benchmark cases are sizes only the lab's benchmark times beside the performance cases.
#pragma once

#include "labkit/generators.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace labkit {

struct Case {
  std::string name;
  std::string kind;  // "correctness", "performance" or "benchmark"
  bool hidden = false;
  std::size_t n = 0;
  InputSpec input;
  std::map<std::string, std::string> params;  // lab-specific: k, m, alpha...

  bool has(const std::string& key) const { return params.count(key) != 0; }
  long long integer(const std::string& key) const;  // throws when missing
  long long integer(const std::string& key, long long fallback) const;
  double number(const std::string& key) const;
  double number(const std::string& key, double fallback) const;
  std::string label() const;  // "uniform n=1000003 seed=7": printed with failures
};

// A case marked `mpi: 1` runs the submission's part 2 in MPI ranks under mpirun (labs 12 and
// 13), not in its host: compute-sanitizer and the profiler, which wrap the host, see none of it.
inline bool runs_in_mpi_ranks(const Case& c) { return c.integer("mpi", 0) != 0; }

struct Dataset {
  std::string lab;
  std::vector<Case> correctness;
  std::vector<Case> performance;
  // Never graded: a list apart, so that nothing that grades has to know to skip them.
  std::vector<Case> benchmark;
};

// Loads a dataset file; `run_seed` (grade --seed or the instructor's secret) is mixed into
// every case's seed, so the inputs change while the cases stay the same.
Dataset load_dataset(const std::string& path, std::uint64_t run_seed = 0);

// What a lab's benchmark times: the performance cases (the sizes the grader times) and the
// benchmark cases, smallest n first, cases of one n in the dataset's order: the benchmark's
// table reads as a ladder of sizes whichever list a size sits in.
std::vector<Case> benchmark_cases(const Dataset& dataset);

}  // namespace labkit
