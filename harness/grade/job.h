// What grading one lab of one submission is made of: the toolchain, the options and the job.
// The grade/ headers below grader.h (compiling, running the checks, the batch, Slurm) need
// these and nothing of grader.h's steps.
#pragma once

#include "catalog.h"

#include <cstdint>
#include <string>
#include <vector>

namespace grade {

struct Toolchain {
  std::string source_root;
  std::string build_root;
  std::string nvcc;
  std::vector<std::string> cuda_flags;
};

// When compute-sanitizer checks a lab's cases again (sanitize.h).
enum class SanitizeWhen {
  never,
  failures,  // the failing correctness cases, when there are any
  always,    // the failing cases, or the first cases when none fails (`--sanitize`)
};

struct GradeOptions {
  std::uint64_t seed = 0;   // mixed into every case's inputs (with the instructor's secret)
  bool performance = true;  // run the performance cases
  int time_limit_seconds = 0;  // overrides every lab's rubric when positive
  std::string calibration_dir;  // reference timings kept between runs (empty: time them every run)
  std::string gpu_lock_dir;     // where each GPU's lock lives when labs share a GPU (empty: they do not)
  int gpu_count = 1;            // GPUs the batch spreads over: a lab on several locks them all
  SanitizeWhen sanitize = SanitizeWhen::never;
  bool live_progress = false;   // a status line on stderr, rewritten in place (a terminal only)
};

// One lab of one submission.
struct LabJob {
  const LabSpec* lab = nullptr;
  std::string who;          // the submission's name
  std::string student_dir;  // where its files for this lab are; empty when missing
  std::string work_dir;     // staged sources, the compiled module, logs
  std::string copies_note;  // other copies of the files left out (copies_left_out), or empty
};

}  // namespace grade
