// Grades one lab of one submission: stage and compile the student's files, run the lab's
// checks in a child process, and turn what the child reported into points.
#pragma once

#include "catalog.h"
#include "intake.h"
#include "job.h"
#include "model.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace grade {

Toolchain configured_toolchain();  // what Meson recorded at configure time

// Stage 1, on a CPU core: stage and compile the student's files, and look for forbidden
// libraries (compile.cpp). Returns false when there is nothing to run; `result` then says why.
bool build_lab(const LabJob& job, const Toolchain& toolchain, LabResult& result);

// A lab that cannot be graded at all (`note` says why): every case scores zero, nothing is built.
LabResult not_graded(const LabSpec& lab, LabStatus status, const std::string& note);

// Stage 2, on the GPU numbered `gpu` (-1: whichever the runtime picks): run the checks and
// score what they report. `on_waiting_to_time` is called when the checks are done and the run
// starts waiting for the GPU alone (each time it does).
void run_lab(const LabJob& job, const Toolchain& toolchain, const GradeOptions& options, int gpu,
             LabResult& result, const std::function<void()>& on_waiting_to_time = {});

// Times the reference solution's performance cases afresh and stores them in the calibration
// cache (options.calibration_dir). Returns the runner's records, one per case.
std::vector<nlohmann::json> calibrate_lab(const LabSpec& lab, const Toolchain& toolchain, const GradeOptions& options);

// Runs one case's checks on the reference solution with --export, so its input and expected
// output land as .npy files in out_dir/<case>/. Returns the runner's exit status.
int export_case(const LabSpec& lab, const std::string& case_name, const Toolchain& toolchain,
                std::uint64_t seed, const std::string& out_dir);

// `grade profile`: the lab's main performance case (`case_name`, or the first in lab.yaml) run
// once for the submission and once for the reference under Nsight Compute; prints the two
// side by side. Returns grade's exit status (3 when ncu is missing or may not profile).
int profile_lab(const LabJob& job, const std::string& case_name, const Toolchain& toolchain,
                const GradeOptions& options);

}  // namespace grade
