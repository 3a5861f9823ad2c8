// The lab runner: the trusted side of a lab's checks. It loads the reference solution and the
// dataset, starts the submission's host process on first use, and hands over to doctest.
// Every lab's test executable is its test file plus this.
#define DOCTEST_CONFIG_IMPLEMENT
#include "labkit/lab.h"

#include "labkit/calibration.h"
#include "labkit/fingerprint.h"
#include "labkit/gpu_lock.h"
#include "labkit/protocol.h"
#include "labkit/results.h"

#include "child_process.h"

#include <dlfcn.h>
#include <sys/file.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>

namespace labkit {

namespace {

using protocol::Outcome;

using RunnerOptions = protocol::RunnerArguments;

struct RunnerState {
  RunnerOptions options;
  std::unique_ptr<HostProcess> student;
  std::unique_ptr<Module> reference;
  Dataset dataset;
  Calibration calibration;
  int correctness_failures = 0;
  bool sandbox_reported = false;
  // `grade export` on a machine that cannot run the lab (no GPU): the checks run only as far
  // as the CPU takes them, for the arrays they export first; nothing is a verdict.
  bool export_without_gpu = false;
  std::vector<std::string> exported;
};

RunnerState& state() {
  static RunnerState s;
  return s;
}

// Seconds since the runner started: each case's line in the run log carries it, so a slow
// case (or a slow start) shows where a run's time went.
double seconds_running() {
  static const auto started = std::chrono::steady_clock::now();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
}

template <class T>
const T& loaded(const std::unique_ptr<T>& item, const char* what) {
  if (!item) throw std::logic_error(std::string("the runner was started without --") + what);
  return *item;
}

nlohmann::json timing_json(const TimingStats& t, double bytes_moved, double peak_gbps) {
  const double gbps = gigabytes_per_second(bytes_moved, t.ms.median);
  nlohmann::json json = {{"median_ms", t.ms.median},       {"min_ms", t.ms.min},
                         {"mean_ms", t.ms.mean},           {"stdev_ms", t.ms.stdev},
                         {"relative_error", t.ms.relative_error}, {"samples", t.ms.count},
                         {"gbps", gbps},                   {"percent_of_peak", 100.0 * gbps / peak_gbps},
                         {"sm_clock_mhz", t.sm_clock_mhz}, {"off_stream_work", t.off_stream_work}};
  if (t.remote)
    json.update({{"confirmed", t.confirmed},
                 {"reported_ms", t.reported_ms},
                 {"unexplained_ms", t.unexplained_ms},
                 {"unconfirmed_samples", t.unconfirmed_samples},
                 {"impossible_samples", t.impossible_samples},
                 {"empty_ceiling_ms", t.empty_ceiling_ms},
                 {"ceiled_empty_calls", t.ceiled_empty_calls},
                 {"noise_relative_error", noise_relative_error(t.ms)}});
  return json;
}

// One honest call of `device_ms` through a host that runs no submission (a kernel that spins
// that long), timed the same way as the submission's (`host_clock`: the host wakes every
// device first, as it does for the call): returns the device time the host reported, which
// the timing loop subtracts from its own clock's view of the call (RoundTripProbe).
double empty_call_ms(double device_ms, bool host_clock) {
  static std::unique_ptr<HostProcess> probe;
  if (!probe) {
    probe = std::make_unique<HostProcess>(HostOptions{state().options.host, "", state().options.call_seconds});
    probe->pin_to_cpu(child::timing_cpu());
  }
  wire::Request noop;
  noop.op = wire::Op::noop;
  noop.timed = 1;
  noop.host_clock = host_clock;
  noop.spin_ns = std::uint64_t(device_ms * 1e6);
  return probe->request(noop).event_ms;
}

// A ratio this close to a threshold could land on either side of it with another
// measurement of the reference: a cached reference time is not good enough there.
bool near_threshold(const std::string& case_name, double ratio, double noise) {
  const auto& thresholds = state().options.thresholds;
  const auto found = std::find_if(thresholds.begin(), thresholds.end(),
                                  [&](const protocol::Threshold& t) { return t.case_name == case_name; });
  if (found == thresholds.end()) return false;
  const double margin = noise + 0.05;
  for (double threshold : {found->zero_credit_ratio, found->full_credit_ratio})
    if (threshold > 0 && std::fabs(ratio / threshold - 1) <= margin) return true;
  return false;
}

void report_sandbox_once() {
  HostProcess& host = *state().student;
  if (state().sandbox_reported || host.sandbox().empty()) return;
  state().sandbox_reported = true;
  emit_result(protocol::SandboxRecord{host.sandbox()});
}

// The GPU's read bandwidth: from the calibration cache, else measured (about a second).
double peak_read_gbps() {
  Calibration& calibration = state().calibration;
  if (!state().options.calibrate)
    if (const auto cached = calibration.peak_read_gbps()) return *cached;
  const double measured = measured_read_bandwidth_gbps();
  calibration.store_peak_read_gbps(measured);
  return measured;
}

struct ReferenceTime {
  nlohmann::json json;  // timing_json's record
  std::string source;
  bool cached = false;
  double median_ms() const { return json.value("median_ms", 0.0); }
  double relative_error() const { return json.value("relative_error", 0.0); }
};

// From the first timed case on, the submission's host and the empty call's share one CPU that
// this process leaves to them (child::timing_cpu): measured without, the two hosts' wake-ups
// differed by up to 40 us per case, a gap the timing loop would charge the submission.
void share_timing_cpu() {
  static bool shared = false;
  const int cpu = child::timing_cpu();
  if (shared || cpu < 0) return;
  shared = true;
  child::leave_cpu(cpu);
  if (state().student) state().student->pin_to_cpu(cpu);
}

ReferenceTime measure_reference(const PerfSubject& reference_side, double bytes_moved, double peak) {
  const TimingStats stats = time_call(reference_side.call);
  const std::string error = reference_side.check_output();
  REQUIRE_MESSAGE(error.empty(), "the reference solution is wrong: " << error);
  return {timing_json(stats, bytes_moved, peak), "measured in this run"};
}

// The library's time for the reports' "anchor" ({name, median_ms, ...}), or null when the
// case has no library or the library's answer was wrong (said on the log: a kit problem, not
// the student's, so it costs the case nothing).
nlohmann::json measure_library(const LibraryAnchor& library, double bytes_moved, double peak) {
  if (library.name.empty()) return nullptr;
  const TimingStats stats = time_call(library.subject.call);
  const auto& check = library.subject.check_output;
  if (const std::string error = check ? check() : ""; !error.empty()) {
    std::printf("warning: %s gave a wrong answer, so it is left out of the report: %s\n", library.name.c_str(),
                error.c_str());
    return nullptr;
  }
  nlohmann::json anchor = timing_json(stats, bytes_moved, peak);
  anchor["name"] = library.name;
  return anchor;
}

// The reference's time for a case, with the library's beside it under "library": from the
// calibration cache when it has the case, else measured now (and stored for the runs that
// follow), so a class pays for neither more than once.
ReferenceTime reference_time(const Case& c, const PerfSubject& reference_side, const LibraryAnchor& library,
                             double bytes_moved, double peak) {
  Calibration& calibration = state().calibration;
  if (!state().options.calibrate)
    if (const auto cached = calibration.reference(c.name)) {
      return {*cached,
              "calibration cache " + std::filesystem::path(calibration.path()).filename().string() + " (measured " +
                  cached->value("measured_at", std::string("earlier")) + ")",
              true};
    }
  ReferenceTime fresh = measure_reference(reference_side, bytes_moved, peak);
  if (nlohmann::json anchor = measure_library(library, bytes_moved, peak); !anchor.is_null())
    fresh.json["library"] = std::move(anchor);
  calibration.store(c.name, fresh.json);
  return fresh;
}

void print_line(const Case& c, const nlohmann::json& record) {
  std::printf("[%7.2f s] %-24s reference %9.4f ms", seconds_running(), c.name.c_str(),
              record["reference"].value("median_ms", 0.0));
  if (record.contains("anchor"))
    std::printf("  %s %9.4f ms", record["anchor"]["name"].get<std::string>().c_str(),
                record["anchor"]["median_ms"].get<double>());
  if (record.contains("student"))
    std::printf("  yours %9.4f ms  %s  ratio %.2f", record["student"]["median_ms"].get<double>(),
                protocol::throughput(record, record["student"]).text().c_str(), record["ratio"].get<double>());
  std::printf("\n");
}

}  // namespace

Module::Module(const std::string& path) : path_(path) {
  handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle_ == nullptr) throw std::runtime_error("cannot load " + path + ": " + dlerror());
}

Module::~Module() {
  // Left loaded on purpose: CUDA tears down kernels of unloaded modules at exit anyway, and
  // unloading them first can crash the runtime's own clean-up.
}

void* Module::symbol(const char* name) const {
  dlerror();
  void* address = dlsym(handle_, name);
  if (address == nullptr) throw std::runtime_error(std::string(name) + " is not defined in " + path_);
  return address;
}

HostProcess& student_process() {
  if (!state().student) throw std::logic_error("the runner was started without --student");
  return *state().student;
}

void poison_student_shared_memory(std::uint32_t pattern) {
  wire::Request request;
  request.op = wire::Op::poison_shared_memory;
  request.pattern = pattern;
  student_process().request(request);
}

const Module& reference_module() { return loaded(state().reference, "reference"); }
const Dataset& dataset() { return state().dataset; }
const std::string& export_dir() { return state().options.export_dir; }
bool profiling() { return state().options.profile; }
void note_exported(const std::string& path) { state().exported.push_back(path); }
void make_directories(const std::string& path) { std::filesystem::create_directories(path); }

// A correctness case's outcome, on the channel, in the run log and to doctest: a failure (or
// a hang) fails the doctest check; a case that could not run is only a message.
static void report_case(const Case& c, Outcome outcome, const std::string& message) {
  if (state().export_without_gpu) return;
  if (state().student) report_sandbox_once();
  if (protocol::is_failure(outcome) && c.kind == "correctness") ++state().correctness_failures;
  emit_result(protocol::CorrectnessRecord{c.name, outcome, message});
  std::printf("[%7.2f s] %-28s %s\n", seconds_running(), c.name.c_str(),
              outcome == Outcome::not_run ? message.c_str() : protocol::to_string(outcome));
  if (outcome == Outcome::not_run)
    MESSAGE(c.name << ": " << message);
  else
    CHECK_MESSAGE(outcome == Outcome::passed, c.name << " (" << c.label() << "): " << message);
}

void verdict(const Case& c, bool passed, const std::string& message) {
  report_case(c, passed ? Outcome::passed : Outcome::failed, message);
}

void not_run(const Case& c, const std::string& why) {
  if (c.kind != "performance") return report_case(c, Outcome::not_run, why);
  emit_result(protocol::PerformanceRecord{c.name, Outcome::not_run, why});
  std::printf("[%7.2f s] %-24s %s\n", seconds_running(), c.name.c_str(), why.c_str());
  MESSAGE(c.name << ": " << why);
}

// After an error such as an illegal address in the checks' own context every later CUDA
// call fails. Rather than fail every remaining case, the runner stops and lets the grader run
// them again in fresh processes. (The submission's errors happen in its own process.)
[[noreturn]] static void stop_after_lost_context() {
  std::fflush(stdout);
  std::_Exit(protocol::exit_status::context_lost);
}

static bool context_lost() {
  cudaGetLastError();
  return cudaDeviceSynchronize() != cudaSuccess;
}

// Tells the grader what is starting, so that a person at a terminal sees it (harness/grade/progress.h).
static void report_progress(const Case& c, const char* stage) {
  emit_result(protocol::ProgressRecord{c.kind, c.name, stage});
}

void for_each_correctness_case(const std::function<void(const Case&)>& check, const CaseFilter& selected) {
  for (const Case& c : dataset().correctness) {
    if (selected && !selected(c)) continue;
    SUBCASE(c.name.c_str()) { run_case(c, [&] { check(c); }); }
  }
}

void for_each_timed_case(const std::function<void(const Case&)>& time, const CaseFilter& selected) {
  for (const Case& c : dataset().performance) {
    if (selected && !selected(c)) continue;
    SUBCASE(c.name.c_str()) {
      if (timing_wanted(c)) time(c);
    }
  }
}

void run_case(const Case& c, const std::function<void()>& body) {
  if (state().export_without_gpu) {  // runs the case until its first CUDA call fails
    try {
      body();
    } catch (const std::exception&) {  // that call: expected here
    }
    return;
  }
  report_progress(c, "checking");
  try {
    body();
  } catch (const SubmissionFailure& failure) {  // the submission's process: failed, hung or refused
    report_case(c, failure.outcome(), failure.what());
    if (context_lost()) stop_after_lost_context();
  } catch (const std::exception& error) {
    verdict(c, false, error.what());
    if (context_lost()) stop_after_lost_context();
  }
}

// The grader may run several labs on one GPU at once (LABKIT_GPU_LOCK names that GPU's lock
// file, or every GPU's, separated by ':', for a lab that runs on several). Checking
// correctness shares a GPU; timing must have it alone. So a runner holds its locks shared
// from its start and exclusive from its first timed case to its end, and a runner that waits
// for one exclusive has given up its shared hold on it first (flock converts by unlocking).
// A runner of one GPU holds one lock, and the grader runs one several-GPU lab at a time,
// which takes its locks in order: no two runners ever wait for each other.
// The locks are opened once, at the runner's start (open_gpu_locks: one that cannot be opened
// stops the runner with a fault, as timing without it would not have the GPU alone).
static std::vector<int>& gpu_lock_fds() {
  static std::vector<int> fds;
  return fds;
}

// While one lives, the grader's time limit does not count this runner's time: it waits for
// others or does the grader's own work (protocol::ClockRecord). So a submission's verdict
// does not depend on how many labs share its GPU or whether the reference's times were cached.
class ClockStopped {
 public:
  explicit ClockStopped(const char* why) { emit_result(protocol::ClockRecord{false, why}); }
  ~ClockStopped() { emit_result(protocol::ClockRecord{true, ""}); }
  ClockStopped(const ClockStopped&) = delete;
  ClockStopped& operator=(const ClockStopped&) = delete;
};

// The log says how long each wait took: what a batch's rate loses to the GPU's lock.
static void lock_gpus_uncounted(int how) {
  const double asked = seconds_running();
  {
    const ClockStopped waiting("waiting for the GPU: another lab is timing on it");
    lock_gpus(gpu_lock_fds(), how);
  }
  if (const double waited = seconds_running() - asked; waited >= 0.1)
    std::printf("[%7.2f s] the GPU %s after %.2f s waiting\n", seconds_running(),
                how == LOCK_EX ? "alone, for timing," : "shared, for checking,", waited);
}

void hold_gpu_alone() {
  static bool holding_alone = false;
  if (!holding_alone) lock_gpus_uncounted(LOCK_EX);
  holding_alone = true;
}

bool timing_wanted(const Case& c) {
  const RunnerState& s = state();
  if (s.options.calibrate || s.options.time_failed || s.correctness_failures == 0) {
    hold_gpu_alone();
    return true;
  }
  const std::string why = "not timed: " + std::to_string(s.correctness_failures) + " correctness case(s) failed";
  emit_result(protocol::PerformanceRecord{c.name, Outcome::not_run, why});
  std::printf("[%7.2f s] %-24s %s\n", seconds_running(), c.name.c_str(), why.c_str());
  return false;
}

// `grade profile`: the student's side is called once, untimed, while a profiler watches the
// host process; the reference is profiled the same way, as the --student of another run.
static void profile_once(const Case& c, const PerfSubject& student_side) {
  std::string error;
  try {
    const TimedCall& call = student_side.call;
    if (call.prepare) call.prepare(0);
    if (call.reveal) call.reveal(false);
    call.launch(nullptr);
    if (call.collect) call.collect(false);
    error = student_side.check_output();
  } catch (const std::exception& failure) {
    error = failure.what();
  }
  emit_result(protocol::ProfiledRecord{c.name, error.empty(), error});
  std::printf("[%7.2f s] %-24s profiled one call%s\n", seconds_running(), c.name.c_str(),
              error.empty() ? "" : (": " + error).c_str());
}

void measure_performance(const Case& c, Work work, const PerfSubject& student_side,
                         const PerfSubject& reference_side, const LibraryAnchor& library, const PerfHint& hint,
                         const PerfRequirement& requirement) {
  const double bytes_moved = work.bytes;
  RunnerState& s = state();
  if (!timing_wanted(c)) return;
  report_progress(c, s.options.profile ? "profiling" : "timing");
  if (s.options.profile) return profile_once(c, student_side);
  nlohmann::json record = {{"bytes", bytes_moved}};
  const double peak = peak_read_gbps();
  record["peak_read_gbps"] = peak;
  if (work.flops > 0) record.update({{"flops", work.flops}, {"peak_fp32_gflops", current_device().peak_fp32_gflops}});
  // Nothing of the submission's may run while the reference is timed: no process, no thread.
  if (s.student) s.student->stop();
  share_timing_cpu();
  const double reference_started = seconds_running();
  ReferenceTime reference = [&] {
    const ClockStopped timing_reference("timing the reference");
    return reference_time(c, reference_side, library, bytes_moved, peak);
  }();
  std::printf("[%7.2f s] %-24s the reference's times (%s) in %.2f s\n", seconds_running(), c.name.c_str(),
              reference.cached ? "cached" : "measured", seconds_running() - reference_started);
  if (reference.json.contains("library")) {
    record["anchor"] = reference.json["library"];
    reference.json.erase("library");
  }
  record["reference"] = reference.json;
  record["reference_source"] = reference.source;
  if (s.options.calibrate) {
    emit_result(protocol::PerformanceRecord{c.name, Outcome::passed, "", record, true});
    print_line(c, record);
    return;
  }

  std::string student_error;
  try {
    TimedCall call = student_side.call;
    call.verify = student_side.check_output;
    const double reference_ms = reference.median_ms();
    if (s.student) s.student->stop();  // the empty call's ceiling is measured while no process of the submission's exists
    TimingStats student_time = time_submission_call(
        call, [reference_ms, &call] { return empty_call_ms(reference_ms, call.host_clock); });
    // Only reports taken as they are (the sample-confirmation defence off) can score no time at
    // all: a picosecond keeps every rate finite, and the floors judge it.
    student_time.ms.median = std::max(student_time.ms.median, 1e-9);
    std::printf("[%7.2f s] %-24s %zu samples: %.2f s preparing, %.2f s in the calls, %.2f s checking outputs\n",
                seconds_running(), c.name.c_str(), student_time.ms.count, student_time.preparing_seconds,
                student_time.calling_seconds, student_time.checking_seconds);
    record["student"] = timing_json(student_time, bytes_moved, peak);
    if (hint) record["hint"] = hint(student_time.ms.median);
    if (requirement) record["lesson_missing"] = requirement(student_time.ms.median);
    record["ratio"] = reference.median_ms() / student_time.ms.median;
    const double noise = ratio_noise(noise_relative_error(student_time.ms), reference.relative_error());
    if (reference.cached && near_threshold(c.name, record["ratio"], noise)) {
      s.student->stop();
      const ClockStopped timing_reference("timing the reference again");
      reference = measure_reference(reference_side, bytes_moved, peak);
      reference.source = "measured again in this run: the ratio sat near a threshold";
      record["reference"] = reference.json;
      record["reference_source"] = reference.source;
      record["ratio"] = reference.median_ms() / student_time.ms.median;
    }
  } catch (const std::exception& error) {
    student_error = error.what();
  }
  const bool lost = context_lost();
  record["output_ok"] = student_error.empty();
  emit_result(protocol::PerformanceRecord{c.name, student_error.empty() ? Outcome::passed : Outcome::failed,
                                          student_error, record});
  print_line(c, record);
  CHECK_MESSAGE(student_error.empty(), c.name << ": " << student_error);
  if (lost) stop_after_lost_context();
}

}  // namespace labkit

namespace {

struct RunnerArguments {
  labkit::RunnerOptions options;
  labkit::Requirements needs;
  std::uint64_t seed = 0;
  bool listing_only = false;
  std::vector<std::string> doctest_arguments;  // argv[0], then what is not the runner's
};

// The runner's own flags (labkit/protocol.h); everything else goes to doctest. The seed comes
// from LABKIT_RUN_SEED unless --seed gives it, so that the grader need not put it on a command
// line other processes see.
RunnerArguments parse_arguments(int argc, char** argv) {
  using labkit::protocol::env::run_seed;
  RunnerArguments args;
  args.options = labkit::protocol::RunnerArguments::parse(std::vector<std::string>(argv + 1, argv + argc));
  labkit::RunnerOptions& o = args.options;
  if (const char* seed = std::getenv(run_seed)) args.seed = std::stoull(seed);
  unsetenv(run_seed);
  if (o.seed) args.seed = *o.seed;
  if (!o.min_compute_capability.empty())
    std::sscanf(o.min_compute_capability.c_str(), "%d.%d", &args.needs.major, &args.needs.minor);
  if (o.min_gpus > 0) args.needs.gpus = o.min_gpus;
  // doctest's own flags, the suite and subcases included, as doctest spells them.
  args.doctest_arguments.push_back(argv[0]);
  labkit::protocol::RunnerArguments doctest_only;
  doctest_only.test_suite = o.test_suite;
  doctest_only.subcases = o.subcases;
  doctest_only.doctest = o.doctest;
  for (const std::string& argument : doctest_only.to_argv()) {
    for (const char* listing : {"-ltc", "--list-test-cases", "-lts", "--list-test-suites", "-h", "--help", "-?"})
      if (argument.rfind(listing, 0) == 0) args.listing_only = true;
    args.doctest_arguments.push_back(argument);
  }
  return args;
}

// The lab's host program sits beside the runner: lab-NN-name-runner → lab-NN-name-host.
std::string default_host() {
  const std::string path = std::filesystem::canonical("/proc/self/exe").string();
  const auto at = path.rfind("-runner");
  return at == std::string::npos ? path + "-host" : path.substr(0, at) + "-host";
}

void load_state(const RunnerArguments& args) {
  using namespace labkit;
  auto& s = state();
  s.options = args.options;
  if (s.options.host.empty()) s.options.host = default_host();
  if (!s.options.dataset.empty()) s.dataset = load_dataset(s.options.dataset, args.seed);
  if (!s.options.reference.empty()) s.reference = std::make_unique<Module>(s.options.reference);
  if (!s.options.student.empty()) {
    HostOptions host{s.options.host, s.options.student, s.options.call_seconds};
    host.forbidden_libraries = s.options.forbidden_libraries;
    host.wrapper = s.options.host_wrapper;
    // Under a tool, a read past a buffer must leave its mapping for memcheck to see it.
    if (!host.wrapper.empty()) place_device_buffers_at_mapping_end();
    host.call_seconds *= s.options.tool_slowdown;
    host.start_seconds *= std::min(s.options.tool_slowdown, 5.0);  // a tool's start-up is slow, not 20x
    s.student = std::make_unique<HostProcess>(host);
  }
  if (!s.options.calibration_dir.empty()) {
    const std::string lab = std::filesystem::path(s.options.dataset).stem().string();
    const std::string fingerprint = !s.options.kit_fingerprint.empty()
                                        ? s.options.kit_fingerprint
                                        : hex(hash_files({"/proc/self/exe", s.options.reference, s.options.dataset}));
    const std::string key = calibration_key(fingerprint);
    s.calibration = Calibration(s.options.calibration_dir, lab, key);
  }
}

// A case's expected output, which every lab's checks export last, under a name that starts
// "expected" (labkit::export_array): once it is written, nothing the case exports is missing.
bool expected_output_written(const std::vector<std::string>& exported) {
  return std::any_of(exported.begin(), exported.end(), [](const std::string& path) {
    return std::filesystem::path(path).filename().string().rfind("expected", 0) == 0;
  });
}

// `grade export` where the lab cannot run: the arrays the checks draw on the CPU, no
// submission process. Exits ok when the case's arrays were all written (its expected output
// too), not_run (some of what was asked could not be done here) when only some were,
// skipped (this machine cannot run the checks) when none was.
int export_inputs_only(RunnerArguments args, doctest::Context& context, const std::string& reason) {
  namespace exit_status = labkit::protocol::exit_status;
  std::printf("%s: writing what the checks compute on the CPU\n", reason.c_str());
  args.options.student.clear();
  try {
    load_state(args);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "labkit runner: %s\n", error.what());
    return exit_status::runner_fault;
  }
  labkit::state().export_without_gpu = true;
  context.run();
  const std::vector<std::string>& exported = labkit::state().exported;
  for (const std::string& path : exported) std::printf("wrote %s\n", path.c_str());
  if (exported.empty()) {
    std::printf("the case's checks draw nothing on the CPU before they need the GPU\n");
    return exit_status::skipped;
  }
  if (expected_output_written(exported)) return exit_status::ok;
  std::printf("its expected output needs the GPU, so it was left out\n");
  return exit_status::not_run;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace labkit;
  namespace exit_status = protocol::exit_status;
  seconds_running();
  open_result_channel_from_environment();
  RunnerArguments args;
  try {
    const char* locks = std::getenv(protocol::env::gpu_lock);
    gpu_lock_fds() = open_gpu_locks(locks != nullptr ? locks : "");
    lock_gpus_uncounted(LOCK_SH);  // before this process does anything on the GPU
    args = parse_arguments(argc, argv);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "labkit runner: %s\n", error.what());
    emit_result(protocol::FaultRecord{error.what()});
    return exit_status::runner_fault;
  }
  std::vector<char*> doctest_argv;
  for (std::string& argument : args.doctest_arguments) doctest_argv.push_back(argument.data());
  doctest::Context context(int(doctest_argv.size()), doctest_argv.data());
  if (args.listing_only) return context.run();

  const auto reason = why_unsupported(args.needs);
  if (reason && !args.options.export_dir.empty()) return export_inputs_only(args, context, *reason);
  if (reason) {
    std::printf("SKIPPED: %s: these tests cannot run here\n", reason->c_str());
    emit_result(protocol::SkippedRecord{*reason});
    return exit_status::skipped;
  }
  try {
    load_state(args);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "labkit runner: %s\n", error.what());
    emit_result(protocol::FaultRecord{error.what()});
    return exit_status::runner_fault;
  }
  const DeviceInfo& device = current_device();
  std::printf("[%7.2f s] runner ready on %s\n", seconds_running(), device.name.c_str());
  emit_result(protocol::DeviceRecord{device.name, std::to_string(device.major) + "." + std::to_string(device.minor),
                                     device.sm_count});
  const int failures = context.run();
  if (state().student && !state().student->forbidden_seen().empty())
    emit_result(protocol::ForbiddenRecord{state().student->forbidden_seen()});
  state().student.reset();  // ends the submission's process before we report done
  std::printf("[%7.2f s] done\n", seconds_running());
  emit_result(protocol::DoneRecord{failures});
  return failures == 0 ? exit_status::ok : exit_status::failed;
}
