// What a lab's test file uses: the student's and the reference's functions, the lab's
// dataset, and the two ways a case reports its verdict to the grader.
//
// The checks are the trusted side. The submission's code never runs in their process: each
// call of `student<Fn>(name)` runs in a separate, sandboxed host process (labkit/remote.h)
// that maps only the DeviceBuffers passed to it. The reference solution is trusted and is
// loaded here directly.
#pragma once

#include "labkit/buffer.h"
#include "labkit/compare.h"
#include "labkit/cuda_check.h"
#include "labkit/dataset.h"
#include "labkit/device.h"
#include "labkit/fresh_input.h"
#include "labkit/generators.h"
#include "labkit/npy.h"
#include "labkit/remote.h"
#include "labkit/timing.h"

#include <doctest/doctest.h>

#include <functional>
#include <string>

namespace labkit {

// The reference solution, loaded at run time so the checks are built once.
class Module {
public:
  explicit Module(const std::string& path);
  ~Module();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  void* symbol(const char* name) const;  // throws with a hint when it is missing
  const std::string& path() const { return path_; }

private:
  std::string path_;
  void* handle_ = nullptr;
};

void make_directories(const std::string& path);

const Module& reference_module();
const Dataset& dataset();

// The process that runs the submission's code (started on first use).
HostProcess& student_process();

// The contract's functions are declared extern "C" in the lab header, so `Fn` is the
// declared function's type: student<decltype(histogram)>("histogram"). Both convert to
// Function<Fn>, which is what helpers shared by the two sides should take.
template <class Fn>
RemoteFunction<Fn> student(const char* name) {
  return RemoteFunction<Fn>(student_process(), name);
}
template <class Fn>
Fn* reference(const char* name) {
  return reinterpret_cast<Fn*>(reference_module().symbol(name));
}
template <class Fn>
using Function = std::function<Fn>;

// Fills every SM's shared memory with `pattern` in the submission's process before its next
// call, so a read of a slot no thread wrote gives the same wrong answer every time.
void poison_student_shared_memory(std::uint32_t pattern);

// Where `grade export` asked the runner to write arrays (--export DIR), or empty.
const std::string& export_dir();

// True under `grade profile`, where a performance case makes one untimed call of the
// student's side under a profiler: a lab's own calls before it (lab 12's split check) would be
// profiled too, kernel by kernel, and are skipped.
bool profiling();

// Notes an array `grade export` wrote (the runner lists them; without a GPU they are all an
// export can give).
void note_exported(const std::string& path);

// With --export, writes `values` to DIR/<case>/<name>.npy; otherwise does nothing. A lab's
// checks export each case's inputs and expected outputs, so students can open them in NumPy.
// Export them before the case's first CUDA call: on a machine without a GPU, `grade export`
// still runs the checks, and what was exported before the first CUDA call fails is what the
// student gets.
template <class T>
void export_array(const Case& c, const std::string& name, const std::vector<T>& values,
                  std::vector<std::size_t> shape = {}) {
  if (export_dir().empty()) return;
  const std::string folder = export_dir() + "/" + c.name;
  make_directories(folder);
  write_npy(folder + "/" + name + ".npy", values, std::move(shape));
  note_exported(folder + "/" + name + ".npy");
}

// Records a correctness verdict for one case: a doctest CHECK (so meson test and the
// console see it) and a record on the grader's result channel. `message` says what went
// wrong and, where the failure's signature allows, gives a hint.
void verdict(const Case& c, bool passed, const std::string& message = {});

// Records that a case could not run here (`why`: "not run: needs MPI (...)"): reported as not
// run, never as passed or failed, and it does not stop the performance cases from being timed.
// A correctness or a performance case, by its kind.
void not_run(const Case& c, const std::string& why);

// Runs `body` for one case, turning a CUDA error, a crash or hang of the submission's process
// or any other exception into a verdict with its message instead of losing the remaining
// cases: failed, or hung or not run as the SubmissionFailure says.
void run_case(const Case& c, const std::function<void()>& body);

// Waits until this run has its GPUs to itself, and keeps them so to its end: the grader may
// run other labs' correctness checks on them meanwhile. Timing takes this by itself; call it
// first in a correctness case whose verdict depends on a time (e.g. "do the copies overlap").
void hold_gpu_alone();

// False, with the case reported as not timed, once a correctness case has failed: a lab's
// performance case checks this before it makes its (large) inputs.
bool timing_wanted(const Case& c);

// The case loops every lab's checks share. Each case is a doctest subcase named after it (so
// `grade export` and a re-run pick one by name); a correctness case runs through run_case,
// whose verdict an exception or a crash becomes, and a performance case runs only when
// timing_wanted, before it makes its inputs.
// `selected`, when given, picks the cases of one part of a lab (lab 13: the MPI cases).
using CaseFilter = std::function<bool(const Case&)>;
void for_each_correctness_case(const std::function<void(const Case&)>& check, const CaseFilter& selected = {});
void for_each_timed_case(const std::function<void(const Case&)>& time, const CaseFilter& selected = {});

// One side of a performance comparison. `call.prepare(sample)` draws the sample's input and
// poisons the output, `call.reveal` and `call.collect` bound the timed window
// (labkit/fresh_input.h); `check_output` compares the collected output with what the drawn
// input should give (the reference's answer, or an exact check).
struct PerfSubject {
  TimedCall call;
  std::function<std::string()> check_output;  // "" when the output is right
};

// Times the reference and the student on the same inputs and reports times, GB/s, % of
// measured bandwidth and the speed ratio. The student's output is checked after every timed
// call; its time is confirmed by our clock (time_submission_call). The reference's time comes
// from the calibration cache when there is one, and is measured again here when the ratio sits
// near one of the rubric's thresholds. Nothing is timed once a correctness case has failed.
// A `library` (below) is timed with the reference, for the reports only.
//
// `hint`, when given, turns the student's median time (ms) into advice for a correct but slow
// call ("no overlap: ...", with what the lab measured), or "" for none; the grader shows it
// with the case. For labs whose chapter is about speed, not about a wrong answer.
using PerfHint = std::function<std::string(double student_ms)>;

// The units that bound a compute-bound case: the FP32 lanes (SGEMM, N-body) or the tensor
// cores running BF16 multiply-adds (lab 04's part 2).
enum class ComputeUnits { fp32_lanes, bf16_tensor_cores };

// The least a case must do: the bytes it moves through device memory and, for compute-bound
// labs, its floating-point operations and the units that run them. The grader gives no speed
// credit for a time below either floor (the measured read bandwidth; the peak of those units).
// `shown_flops`, where a lab's README counts its work another way (N-body: every body against
// every other, though a kernel may compute each pair once), is what the reports' TFLOP/s count
// instead, so that they read like the README and the benchmark.
struct Work {
  Work(double bytes_moved, double flops_done = 0, double flops_shown = 0,
       ComputeUnits computed_on = ComputeUnits::fp32_lanes)
      : bytes(bytes_moved), flops(flops_done), shown_flops(flops_shown), units(computed_on) {}
  double bytes;
  double flops;
  double shown_flops;
  ComputeUnits units;
};

// What a lab's lesson requires of a correct call beyond its answer, judged from the
// student's median time (lab 11: the copies and the kernel overlap): "" when the call shows
// it, else why not. A call that lacks it earns no speed points whatever its ratio, so that a
// correct serial pipeline does not pass a lab about overlap.
using PerfRequirement = std::function<std::string(double student_ms)>;

// The vendor library that does the case's job (CUB, cuBLAS; for a lab no library covers, the
// hardware's own yardstick, e.g. a device-to-device copy), timed on the same inputs as the
// reference and shown beside it in the reports. It earns and costs the student nothing; it
// is measured once per calibration, with the reference. Its output is checked like the
// reference's (a yardstick that computes something else, like a copy, has no check), and a
// wrong one is left out with a warning.
struct LibraryAnchor {
  std::string name;  // as the reports show it: "cub::DeviceHistogram::HistogramEven"
  PerfSubject subject;
};

void measure_performance(const Case& c, Work work, const PerfSubject& student_side,
                         const PerfSubject& reference_side, const LibraryAnchor& library = {},
                         const PerfHint& hint = {}, const PerfRequirement& requirement = {});

}  // namespace labkit
