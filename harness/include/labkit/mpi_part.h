// The checks' side of a lab's part 2, where the submission runs as one process per GPU under
// mpirun (labs 12 and 13): where the rank program and the two modules are, why part 2 cannot
// run here, and the groups of ranks that run the student's code and the reference's. Header
// only: the runners include it, beside labkit/lab.h.
#pragma once

#include "labkit/lab.h"
#include "labkit/rank_group.h"

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace labkit {

// Whose code the ranks run. The grader compiles the student's part-2 file apart (it is loaded
// by the ranks, not by the host) and names it in LABKIT_MODULE_MPI; the reference's sits
// beside the reference module, as lab-NN-name-solution-mpi.so.
enum class RankSide { student, reference };

// A program beside this runner (the build puts the rank program there).
inline std::string beside_runner(const std::string& name) {
  return (std::filesystem::canonical("/proc/self/exe").parent_path() / name).string();
}

inline std::string mpi_module(RankSide side) {
  if (side == RankSide::reference) {
    const std::filesystem::path reference = reference_module().path();
    return (reference.parent_path() / (reference.stem().string() + "-mpi.so")).string();
  }
  const char* student = std::getenv("LABKIT_MODULE_MPI");
  return student != nullptr ? student : "";
}

// One call on every rank (requests[r] for rank r; labkit::call_request builds them), timed by
// our clock from the call to the end of the work on every GPU, in ms. The inputs are on the
// GPUs before the ranks start: a pageable cudaMemcpy may return before its bytes land, and the
// ranks are other processes (without this, lab 13's one-float case read the previous call's
// sum on 2 x H200).
inline double call_every_rank(RankGroup& group, std::vector<wire::Request> requests) {
  synchronize_all_devices();
  const auto started = std::chrono::steady_clock::now();
  group.call(std::move(requests));
  synchronize_all_devices();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
}

// At most one group of ranks exists at a time: none of the submission's while the reference
// is timed, and one GPU context per rank and GPU. A group keeps its ranks from case to case,
// as the host does; a case with another rank count starts a new one.
class MpiRanks {
public:
  explicit MpiRanks(std::string rank_program) : rank_program_(std::move(rank_program)) {}

  RankGroup& group(RankSide side, int ranks) {
    keep_only(side);
    std::unique_ptr<RankGroup>& group = side == RankSide::student ? student_ : reference_;
    if (group && group_ranks_ != ranks) group.reset();
    if (!group) {
      RankGroupOptions options;
      options.mpirun = find_mpirun().value_or("mpirun");
      options.program = beside_runner(rank_program_);
      options.module = mpi_module(side);
      options.ranks = ranks;
      group = std::make_unique<RankGroup>(options);
      group_ranks_ = ranks;
    }
    return *group;
  }
  void keep_only(RankSide side) { (side == RankSide::student ? reference_ : student_).reset(); }
  void stop() { student_.reset(), reference_.reset(); }
  // "" when part 2 can run here; else why not ("not run: needs MPI (...)").
  std::string unavailable(RankSide side) const {
    return why_ranks_cannot_run(beside_runner(rank_program_), mpi_module(side), find_mpirun());
  }

private:
  std::string rank_program_;
  std::unique_ptr<RankGroup> student_, reference_;
  int group_ranks_ = 0;
};

}  // namespace labkit
