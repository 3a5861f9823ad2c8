// Part of the grader-runner protocol (labkit/protocol.h), kept apart so that a benchmark or
// the device helpers can name an exit status without the JSON the protocol needs.
#pragma once

namespace labkit::protocol {

// One table for the runner (a lab's test executable) and for `grade`, so that no number
// means two things. `./grade` (the shell launcher) exits with kit_fault when the kit fails
// to build.
namespace exit_status {
constexpr int ok = 0;         // runner: every case passed;  grade: every check ran and passed
constexpr int failed = 1;     // runner: some case failed;   grade: some check failed
constexpr int usage = 2;      // grade: bad command line (CLI11's own status for it)
constexpr int not_run = 3;    // grade: some checks could not run here (no GPU, no MPI) and none failed
constexpr int kit_fault = 4;  // grade: a fault of the kit itself
constexpr int runner_fault = 5;  // runner: could not start (reference or dataset unreadable)
constexpr int skipped = 77;      // runner (and Meson): this machine cannot run the checks
// runner: a CUDA error left the checks' GPU context unusable; the grader runs the cases that
// had not reported again, each in a fresh process.
constexpr int context_lost = 86;
}  // namespace exit_status

}  // namespace labkit::protocol
