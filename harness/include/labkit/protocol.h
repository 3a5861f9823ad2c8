// The contract between the grader and a lab's runner, defined once: the records the runner
// sends on the result channel, the runner's command line, the environment variables the two
// exchange, and the exit statuses of the runner and of `grade`. The runner (harness/src/runner/lab.cpp)
// writes with these and the grader (harness/grade/) reads with them; neither spells a record
// type, a flag or a variable name by hand.
#pragma once

#include "labkit/exit_status.h"
#include "labkit/outcome.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace labkit::protocol {

// ---- environment ----------------------------------------------------------------------------

namespace env {
// Set by the grader for the runner, which reads and removes them before it loads student code.
constexpr const char* result_fd = "LABKIT_RESULT_FD";        // the result channel's descriptor
constexpr const char* result_token = "LABKIT_RESULT_TOKEN";  // stamped on every record
constexpr const char* run_seed = "LABKIT_RUN_SEED";          // mixed into every case's seed
// The GPUs' lock files, ':'-separated: shared while checking, exclusive while timing.
constexpr const char* gpu_lock = "LABKIT_GPU_LOCK";
// LABKIT_MODULE_<NAME>: the compiled one of lab.yaml's `modules:` named NAME (lab 13's "mpi").
constexpr const char* module_prefix = "LABKIT_MODULE_";
// The instructor's secret: read by `grade` only, removed from every child's environment.
constexpr const char* secret = "LABKIT_SECRET";
}  // namespace env

std::string module_variable(const std::string& module_name);  // "mpi" → "LABKIT_MODULE_MPI"

// ---- records ---------------------------------------------------------------------------------

enum class RecordType {
  correctness,  // one correctness case's outcome
  performance,  // one performance case's times (or why it was not timed)
  calibration,  // the reference's times, stored for later runs (`grade calibrate`)
  profiled,     // one untimed call under a profiler (`grade profile`)
  progress,     // a case is starting: for the status line at a terminal
  device,       // the GPU the checks run on
  sandbox,      // what confines the submission's process
  skipped,      // this machine cannot run the checks
  fault,        // the runner could not start
  forbidden,    // the submission loaded a forbidden library at run time
  done,         // the runner finished every case
  clock,        // the runner's own time stops or starts again (its time limit counts only its own)
};

const char* to_string(RecordType type);
std::optional<RecordType> record_type_from_string(const std::string& text);

struct CorrectnessRecord {
  std::string case_name;
  Outcome outcome = Outcome::failed;
  std::string message;
};

struct PerformanceRecord {
  std::string case_name;
  Outcome outcome = Outcome::failed;  // passed: timed, and the output was right after timing
  std::string message;                // why the output was wrong, or why it was not timed
  // The numbers (bytes, peak_read_gbps, reference, student, ratio, hint...). Read back by the
  // grader, the whole record as it arrived.
  nlohmann::json measurement = nlohmann::json::object();
  bool calibration = false;  // sent as a calibration record
};

// The peak that bounds a compute-bound case's record, and its name in the reports: the FP32
// lanes' ("peak_fp32_gflops") or the tensor cores' for BF16 ("peak_bf16_tensor_gflops"); a
// gflops of 0 when the record names neither.
struct ComputePeak {
  double gflops = 0;
  std::string name;  // "FP32 peak", "BF16 tensor-core peak"
};
ComputePeak compute_peak(const nlohmann::json& measurement);

// What bounds a timed case, as every report shows it: for a case whose record names its
// floating-point work ("flops": the compute-bound labs 04 and 08; "flops_shown" where the lab
// counts it as its README does, labkit/lab.h's Work), the rate against the peak of the units
// that do it (compute_peak); for the rest, the bandwidth against the measured read bandwidth.
// `side` is one of the measurement's timings ("student", "reference", "anchor").
struct Throughput {
  bool compute_bound = false;
  double rate = 0;     // TFLOP/s when compute_bound, else GB/s
  double percent = 0;  // of the peak
  std::string peak_name;  // compute_peak's name when compute_bound
  std::string text() const;  // "52.3 TFLOP/s, 77.3% of FP32 peak" or "1184 GB/s, 39.3% of peak"
};
Throughput throughput(const nlohmann::json& measurement, const nlohmann::json& side);

struct ProfiledRecord {
  std::string case_name;
  bool output_ok = false;
  std::string message;
};

struct ProgressRecord {
  std::string kind;  // the case's kind: "correctness" or "performance"
  std::string case_name;
  std::string stage;  // "checking", "timing", "profiling"
};

struct DeviceRecord {
  std::string name;
  std::string compute_capability;  // "9.0"
  int sm_count = 0;
};

struct SandboxRecord {
  std::string description;
};

struct SkippedRecord {
  std::string reason;
};

struct FaultRecord {
  std::string message;
};

struct ForbiddenRecord {
  std::string library;
};

struct DoneRecord {
  int failures = 0;
};

// A run's time limit counts the submission's own time: not the time its runner waits for the
// GPU (another lab on the same GPU is timing) nor the time it spends timing the reference and
// the library. The runner sends `counting: false` before such a wait and `true` after it.
struct ClockRecord {
  bool counting = true;
  std::string why;  // what the runner waits for, while the clock is stopped
  // The wait is for the GPU alone, to time: the checks are done, and a batch lets another lab
  // take this run's place among those checking on the GPU meanwhile.
  bool to_time = false;
};

using Record = std::variant<CorrectnessRecord, PerformanceRecord, ProfiledRecord, ProgressRecord, DeviceRecord,
                            SandboxRecord, SkippedRecord, FaultRecord, ForbiddenRecord, DoneRecord, ClockRecord>;

RecordType type_of(const Record& record);
nlohmann::json to_json(const Record& record);  // with "type"; the channel adds the token
// A record from one line of the channel: nothing when the line is not JSON, lacks `token`
// (a submission printing JSON cannot forge one) or has a type this kit does not know.
std::optional<Record> read_record(const std::string& line, const std::string& token);

// ---- the runner's command line ---------------------------------------------------------------

// A performance case's credit thresholds, as the lab's rubric sets them: the runner measures
// the reference again when a ratio sits near one (a cached time could put it on either side).
struct Threshold {
  std::string case_name;
  double zero_credit_ratio = 0;
  double full_credit_ratio = 1;
  double points = 0;  // the case's speed points (the timing stops once they are known)
};

// The runner's own flags; anything else on its command line goes to doctest (`doctest`).
// The grader fills one of these and calls to_argv(); the runner calls parse().
struct RunnerArguments {
  std::string student;     // the module the host runs: the submission's, or the reference's
  std::string reference;   // the reference solution, loaded into the runner
  std::string dataset;
  std::string export_dir;  // `grade export`: write arrays here
  std::string host;        // the host program (default: beside the runner)
  std::string calibration_dir;
  std::string kit_fingerprint;  // what the calibration cache's entries depend on
  std::vector<Threshold> thresholds;             // the grader's, read from the rubric
  std::vector<std::string> forbidden_libraries;  // file-name stems (libcublas...)
  std::vector<std::string> host_wrapper;         // a tool the host runs under, one argument each
  double tool_slowdown = 1;    // the tool's slowdown: call and start limits grow by it
  double call_seconds = 5;     // a call running longer is a hang
  std::string min_compute_capability;  // "7.0"; empty: any
  int min_gpus = 0;                    // 0: no requirement
  bool profile = false;      // performance cases: one untimed call of the student's side
  bool calibrate = false;    // time the reference only, and store it
  bool time_failed = false;  // time even after a correctness case failed
  // Mixed into every case's seed. The grader passes it in env::run_seed (a command line is
  // visible to other processes); `grade export` passes --seed.
  std::optional<std::uint64_t> seed;
  std::string test_suite;              // doctest's --test-suite
  std::vector<std::string> subcases;   // doctest's --subcase, joined by ','
  std::vector<std::string> doctest;    // anything else, for doctest as it is

  // The runner's executable's argv[1...]: every flag as --name=value.
  std::vector<std::string> to_argv() const;
  // The inverse: accepts --name=value and --name value. Throws std::invalid_argument on a
  // runner flag without its value or with a value that does not read.
  static RunnerArguments parse(const std::vector<std::string>& arguments);
};

}  // namespace labkit::protocol
