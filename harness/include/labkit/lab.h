// What a lab's test file uses: the student's and the reference's functions, the lab's
// dataset, and the two ways a case reports its verdict to the grader.
#pragma once

#include "labkit/buffer.h"
#include "labkit/compare.h"
#include "labkit/cuda_check.h"
#include "labkit/dataset.h"
#include "labkit/device.h"
#include "labkit/generators.h"
#include "labkit/npy.h"
#include "labkit/timing.h"

#include <doctest/doctest.h>

#include <functional>
#include <string>

namespace labkit {

// A compiled implementation of the lab's contract (student files or reference solution),
// loaded at run time so the tests are built once and each submission costs one compile.
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

const Module& student_module();
const Module& reference_module();
const Dataset& dataset();

// The contract's functions are declared extern "C" in the lab header, so `Fn` is the
// declared function's type: student<decltype(histogram)>("histogram").
template <class Fn>
Fn* student(const char* name) {
  return reinterpret_cast<Fn*>(student_module().symbol(name));
}
template <class Fn>
Fn* reference(const char* name) {
  return reinterpret_cast<Fn*>(reference_module().symbol(name));
}

// Where `grade export` asked the runner to write arrays (--export DIR), or empty.
const std::string& export_dir();

// With --export, writes `values` to DIR/<case>/<name>.npy; otherwise does nothing. A lab's
// checks export each case's inputs and expected outputs, so students can open them in NumPy.
template <class T>
void export_array(const Case& c, const std::string& name, const std::vector<T>& values,
                  std::vector<std::size_t> shape = {}) {
  if (export_dir().empty()) return;
  const std::string folder = export_dir() + "/" + c.name;
  make_directories(folder);
  write_npy(folder + "/" + name + ".npy", values, std::move(shape));
}

// Records a correctness verdict for one case: a doctest CHECK (so meson test and the
// console see it) and a record on the grader's result channel. `message` says what went
// wrong and, where the failure's signature allows, gives a hint.
void verdict(const Case& c, bool passed, const std::string& message = {});

// Runs `body` for one case, turning a CUDA error or other exception into a failed verdict
// with its message instead of losing the remaining cases.
void run_case(const Case& c, const std::function<void()>& body);

// One side of a performance comparison.
struct PerfSubject {
  TimedCall call;
  std::function<std::string()> check_output;  // "" when the output after timing is right
};

// Times the reference and the student on the same inputs, checks both outputs after
// timing, and reports times, GB/s, % of measured bandwidth and the speed ratio.
void measure_performance(const Case& c, double bytes_moved, const PerfSubject& student_side,
                         const PerfSubject& reference_side);

}  // namespace labkit
