// The grader's first step, on a CPU core: stage a submission's declared files, compile them
// into the modules the lab's runner loads, look for forbidden libraries in the sources and
// the compiled code, and fingerprint what the reference's timings depend on.
#pragma once

#include "job.h"

#include <string>
#include <vector>

namespace grade {

// The shared libraries of the rubric's forbidden ones, as the host's memory map names them
// (libcublas...): the runner stops any call after which one of them is mapped.
std::vector<std::string> forbidden_library_files(const LabSpec& lab);

// What a lab's reference timings depend on (the calibration cache's key), as hex.
std::string kit_fingerprint(const LabSpec& lab, const Toolchain& tc);

}  // namespace grade
