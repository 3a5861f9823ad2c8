// What a command needs built before it runs, as ninja names it: the `./grade` launcher asks
// the grader (`--list-build-targets`) so that `./grade lab 01` builds lab 01's programs and not
// every lab, benchmark and test of the kit.
#pragma once

#include "catalog.h"

#include <string>
#include <vector>

namespace grade {

// The grader itself, then each lab's targets as labs/meson.build lists them in the build's
// labs/lab-targets.txt (its runner, host, reference module, and MPI rank program where Meson
// found MPI); "all" when that file is missing or does not name one of the labs.
std::vector<std::string> build_targets(const std::vector<LabSpec>& labs, const std::string& build_root);

}  // namespace grade
