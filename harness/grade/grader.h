// Grades one lab of one submission: stage and compile the student's files, run the lab's
// checks in a child process, and turn what the child reported into points.
#pragma once

#include "catalog.h"
#include "model.h"

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

Toolchain configured_toolchain();  // what Meson recorded at configure time

struct GradeOptions {
  std::uint64_t seed = 0;       // mixed into every case's inputs
  bool performance = true;      // run the performance cases
  std::string work_dir;         // where staged sources, modules and logs go
};

// Where a lab's student files are: `base/labs/NN-name/`, `base/NN-name/` or `base/` itself
// (a clone of the kit, or the files alone). Empty when none holds them all.
std::string find_student_dir(const LabSpec& lab, const std::string& base);

LabResult grade_lab(const LabSpec& lab, const std::string& student_dir, const Toolchain& toolchain,
                    const GradeOptions& options);

}  // namespace grade
