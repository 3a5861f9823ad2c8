// The grader's side of a lab's runner: its command line and environment, starting it in a
// child process, reading the records it sends (labkit/protocol.h), and running again, one
// by one, the cases a crash left without a result.
#pragma once

#include "job.h"
#include "labkit/dataset.h"
#include "labkit/protocol.h"
#include "process.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace grade {

// What one run of the runner reported, by record.
struct Reports {
  std::map<std::string, std::vector<labkit::protocol::CorrectnessRecord>> correctness;  // case name → its records
  std::map<std::string, std::vector<labkit::protocol::PerformanceRecord>> performance;
  bool done = false;
  bool skipped = false;
  std::string skip_reason;
  std::string fault;
  std::string sandbox;            // what the submission's process was confined by
  std::string forbidden_library;  // loaded at run time despite the rubric
  nlohmann::json device;
  std::optional<labkit::protocol::ProfiledRecord> profiled;  // `grade profile`'s one call
};

struct RunOutcome {
  ChildOutcome child;
  Reports reports;
};

// What every run of one lab's checks shares.
struct RunContext {
  const LabSpec& lab;
  const Toolchain& tc;
  const GradeOptions& options;
  std::filesystem::path lab_work;
  int gpu;
  std::filesystem::path module;  // what the host runs: the submission's, or the reference for calibration
  std::string suites;
};

// What a run on `count` of the GPUs this grader may use, from its GPU `first` (0, 1, ...),
// sets CUDA_VISIBLE_DEVICES to: those entries of the list the grader was given (`inherited`,
// its own CUDA_VISIBLE_DEVICES, e.g. Slurm's "2,3"), or the device numbers themselves when
// there is none. A one-GPU lab then sees one device, and a lab of several GPUs the batch's,
// whatever the machine has: its checks and verdict do not depend on the machine's shape.
// Throws std::invalid_argument when the list is shorter.
std::string visible_devices(int first, int count, const char* inherited);

// The CPUs a run on GPU `gpu` of `gpus` may use: that share of `ours` (the grader's own, in
// order), each GPU's a contiguous part. A run that times has its GPU alone, and with it these
// CPUs: another GPU's checks, busy on the CPU, never slow its host side, so a machine of four
// GPUs gives each what a machine of one gives its only one. All of `ours` when it has fewer
// CPUs than GPUs.
std::vector<int> cpu_share(const std::vector<int>& ours, int gpu, int gpus);

// The spans in which a runner's clock stood still (labkit::protocol::ClockRecord), summed for
// its time limit; a span still open counts up to now.
class RunnerClock {
 public:
  void take(const labkit::protocol::ClockRecord& record);
  double stopped_seconds() const;

 private:
  std::optional<std::chrono::steady_clock::time_point> stopped_since_;
  double stopped_seconds_ = 0;
};

// Called with each record as it arrives (the terminal's status line).
using RecordHandler = std::function<void(const labkit::protocol::Record&)>;

// The lab's time limit: the command line's when given, else the rubric's.
int time_limit(const LabSpec& lab, const GradeOptions& options);

// The lab's runner (its checks) and its reference solution, as Meson builds them.
std::filesystem::path runner_program(const LabSpec& lab, const Toolchain& tc);
std::filesystem::path solution_module(const LabSpec& lab, const Toolchain& tc);

// Limits for a lab's runner (its files may pass the cap on a child's files).
ChildLimits runner_limits(int wall_seconds);

// What every run of `context`'s checks passes the runner; a caller adds its own (a case, a tool).
labkit::protocol::RunnerArguments runner_arguments(const RunContext& context);

// Runs the runner with `arguments`, its output in lab_work/log_name, and reads its records.
RunOutcome run_checks(const RunContext& context, const labkit::protocol::RunnerArguments& arguments,
                      const std::string& log_name, int wall_seconds, const RecordHandler& on_record = {});

// After a crash: each case that had not reported runs again in a process of its own.
void rerun_missing(const RunContext& context, const labkit::Dataset& dataset, Reports& reports);

// The logs a tool the host ran under wrote in `folder`, one per host start ("memcheck-1.log"):
// all of them in start order, and their removal before a run.
std::string read_tool_logs(const std::filesystem::path& folder, const std::string& tool);
void remove_tool_logs(const std::filesystem::path& folder, const std::string& tool);

}  // namespace grade
