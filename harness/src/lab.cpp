// The lab runner: loads the student's and the reference's modules and the dataset, then
// hands over to doctest. Every lab's test executable is its test file plus this.
#define DOCTEST_CONFIG_IMPLEMENT
#include "labkit/lab.h"

#include "labkit/results.h"

#include <dlfcn.h>

#include <cstdio>
#include <filesystem>
#include <cstring>
#include <memory>

namespace labkit {

namespace {

struct RunnerState {
  std::string export_dir;
  std::unique_ptr<Module> student;
  std::unique_ptr<Module> reference;
  Dataset dataset;
};

RunnerState& state() {
  static RunnerState s;
  return s;
}

template <class T>
const T& loaded(const std::unique_ptr<T>& item, const char* what) {
  if (!item) throw std::logic_error(std::string("the runner was started without --") + what);
  return *item;
}

nlohmann::json timing_json(const TimingStats& t, double bytes_moved, double peak_gbps) {
  const double gbps = gigabytes_per_second(bytes_moved, t.ms.median);
  return {{"median_ms", t.ms.median},       {"min_ms", t.ms.min},
          {"mean_ms", t.ms.mean},           {"stdev_ms", t.ms.stdev},
          {"relative_error", t.ms.relative_error}, {"samples", t.ms.count},
          {"gbps", gbps},                   {"percent_of_peak", 100.0 * gbps / peak_gbps},
          {"sm_clock_mhz", t.sm_clock_mhz}, {"off_stream_work", t.off_stream_work}};
}

}  // namespace

Module::Module(const std::string& path) : path_(path) {
  // RTLD_LOCAL: the student's and the reference's modules define the same names.
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
  if (address == nullptr)
    throw std::runtime_error(std::string(name) + " is not defined in " + path_ +
                             ": define it exactly as the lab's header declares it, and include "
                             "that header so it keeps its extern \"C\" name");
  return address;
}

const Module& student_module() { return loaded(state().student, "student"); }
const Module& reference_module() { return loaded(state().reference, "reference"); }
const Dataset& dataset() { return state().dataset; }
const std::string& export_dir() { return state().export_dir; }
void make_directories(const std::string& path) { std::filesystem::create_directories(path); }

void verdict(const Case& c, bool passed, const std::string& message) {
  emit_result({{"type", "correctness"}, {"case", c.name}, {"passed", passed}, {"message", message}});
  CHECK_MESSAGE(passed, c.name << " (" << c.label() << "): " << message);
}

// After an error such as an illegal address the context is lost: every later CUDA call
// fails. Rather than fail every remaining case, the runner stops and lets the grader run
// them again in fresh processes.
[[noreturn]] static void stop_after_lost_context() {
  std::fflush(stdout);
  std::_Exit(context_lost_exit_code);
}

static bool context_lost() {
  cudaGetLastError();
  return cudaDeviceSynchronize() != cudaSuccess;
}

void run_case(const Case& c, const std::function<void()>& body) {
  try {
    body();
  } catch (const std::exception& error) {
    verdict(c, false, error.what());
    if (context_lost()) stop_after_lost_context();
  }
}

void measure_performance(const Case& c, double bytes_moved, const PerfSubject& student_side,
                         const PerfSubject& reference_side) {
  const double peak = measured_read_bandwidth_gbps();
  const TimingStats reference_time = time_call(reference_side.call);
  const std::string reference_error = reference_side.check_output();
  REQUIRE_MESSAGE(reference_error.empty(), "the reference solution is wrong: " << reference_error);

  std::string student_error;
  nlohmann::json record = {{"type", "performance"}, {"case", c.name}, {"bytes", bytes_moved},
                           {"peak_read_gbps", peak},
                           {"reference", timing_json(reference_time, bytes_moved, peak)}};
  try {
    const TimingStats student_time = time_call(student_side.call);
    student_error = student_side.check_output();
    record["student"] = timing_json(student_time, bytes_moved, peak);
    record["ratio"] = reference_time.ms.median / student_time.ms.median;
  } catch (const std::exception& error) {
    student_error = error.what();
  }
  const bool lost = context_lost();
  record["output_ok"] = student_error.empty();
  record["message"] = student_error;
  emit_result(record);

  std::printf("%-24s reference %9.4f ms", c.name.c_str(), reference_time.ms.median);
  if (record.contains("student"))
    std::printf("  yours %9.4f ms  %7.1f GB/s  %5.1f%% of peak  ratio %.2f",
                record["student"]["median_ms"].get<double>(), record["student"]["gbps"].get<double>(),
                record["student"]["percent_of_peak"].get<double>(), record["ratio"].get<double>());
  std::printf("\n");
  CHECK_MESSAGE(student_error.empty(), c.name << ": output wrong after timing: " << student_error);
  if (lost) stop_after_lost_context();
}

}  // namespace labkit

namespace {

struct RunnerArguments {
  std::string student, reference, dataset, export_dir;
  labkit::Requirements needs;
  std::uint64_t seed = 0;
  bool listing_only = false;
  std::vector<char*> doctest_argv;
};

bool take_value(const char* flag, int& i, int argc, char** argv, std::string& out) {
  const std::size_t length = std::strlen(flag);
  if (std::strncmp(argv[i], flag, length) != 0) return false;
  if (argv[i][length] == '=') {
    out = argv[i] + length + 1;
    return true;
  }
  if (argv[i][length] == '\0' && i + 1 < argc) {
    out = argv[++i];
    return true;
  }
  return false;
}

RunnerArguments parse_arguments(int argc, char** argv) {
  RunnerArguments args;
  args.doctest_argv.push_back(argv[0]);
  for (int i = 1; i < argc; ++i) {
    std::string seed;
    if (take_value("--student", i, argc, argv, args.student) ||
        take_value("--reference", i, argc, argv, args.reference) ||
        take_value("--dataset", i, argc, argv, args.dataset) ||
        take_value("--export", i, argc, argv, args.export_dir))
      continue;
    if (take_value("--seed", i, argc, argv, seed)) {
      args.seed = std::stoull(seed);
      continue;
    }
    std::string value;
    if (take_value("--min-compute-capability", i, argc, argv, value)) {
      std::sscanf(value.c_str(), "%d.%d", &args.needs.major, &args.needs.minor);
      continue;
    }
    if (take_value("--min-gpus", i, argc, argv, value)) {
      args.needs.gpus = std::stoi(value);
      continue;
    }
    const std::string arg = argv[i];
    for (const char* listing : {"-ltc", "--list-test-cases", "-lts", "--list-test-suites", "-h", "--help", "-?"})
      if (arg.rfind(listing, 0) == 0) args.listing_only = true;
    args.doctest_argv.push_back(argv[i]);
  }
  return args;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace labkit;
  open_result_channel_from_environment();
  RunnerArguments args = parse_arguments(argc, argv);
  doctest::Context context(int(args.doctest_argv.size()), args.doctest_argv.data());
  if (args.listing_only) return context.run();

  if (const auto reason = why_unsupported(args.needs)) {
    std::printf("SKIPPED: %s: these tests cannot run here\n", reason->c_str());
    emit_result({{"type", "skipped"}, {"reason", *reason}});
    return skip_exit_code;
  }
  try {
    auto& s = state();
    s.export_dir = args.export_dir;
    if (!args.dataset.empty()) s.dataset = load_dataset(args.dataset, args.seed);
    if (!args.reference.empty()) s.reference = std::make_unique<Module>(args.reference);
    if (!args.student.empty()) s.student = std::make_unique<Module>(args.student);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "labkit runner: %s\n", error.what());
    emit_result({{"type", "fault"}, {"message", error.what()}});
    return 3;
  }
  const DeviceInfo& device = current_device();
  emit_result({{"type", "device"}, {"name", device.name},
               {"compute_capability", std::to_string(device.major) + "." + std::to_string(device.minor)},
               {"sm_count", device.sm_count}});
  const int failures = context.run();
  emit_result({{"type", "done"}, {"failures", failures}});
  return failures;
}
