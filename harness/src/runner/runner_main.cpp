// The lab runner's start: it loads the reference solution and the dataset, starts the
// submission's host process on first use, and hands over to doctest. Every lab's test
// executable is its test file plus this.
#define DOCTEST_CONFIG_IMPLEMENT
#include "labkit/lab.h"

#include "labkit/calibration.h"
#include "labkit/fingerprint.h"
#include "labkit/gpu_lock.h"
#include "labkit/protocol.h"
#include "labkit/results.h"

#include "child_process.h"
#include "runner.h"

#include <malloc.h>
#include <sys/file.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>

namespace {

// The checks allocate and free arrays of up to gigabytes, case after case. glibc would map each
// one afresh and unmap it when freed, so the kernel faults in and zeroes every page of every
// case's arrays again, one core's work for each gigabyte.
// Served from the heap and never trimmed, a freed array's pages are reused as they are; the
// price is that the runner keeps its largest footprint until it exits.
void reuse_freed_memory() {
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, -1);
}

struct RunnerArguments {
  labkit::runner::RunnerOptions options;
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
  labkit::runner::RunnerOptions& o = args.options;
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
  using runner::state;
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
  labkit::runner::state().export_without_gpu = true;
  context.run();
  const std::vector<std::string>& exported = labkit::runner::state().exported;
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
  using namespace labkit::runner;
  namespace exit_status = protocol::exit_status;
  seconds_running();
  reuse_freed_memory();
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
