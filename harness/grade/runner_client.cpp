#include "runner_client.h"

#include "compile.h"
#include "labkit/fingerprint.h"
#include "model.h"

#include <sched.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <sstream>

namespace fs = std::filesystem;
using nlohmann::json;

namespace grade {

namespace protocol = labkit::protocol;

namespace {

struct RecordCollector {
  Reports& r;
  void operator()(const protocol::CorrectnessRecord& record) { r.correctness[record.case_name].push_back(record); }
  void operator()(const protocol::PerformanceRecord& record) { r.performance[record.case_name].push_back(record); }
  void operator()(const protocol::DoneRecord&) { r.done = true; }
  void operator()(const protocol::DeviceRecord& record) {
    r.device = protocol::to_json(record);
    r.device.erase("type");
  }
  void operator()(const protocol::SkippedRecord& record) { r.skipped = true, r.skip_reason = record.reason; }
  void operator()(const protocol::FaultRecord& record) { r.fault = record.message; }
  void operator()(const protocol::SandboxRecord& record) { r.sandbox = record.description; }
  void operator()(const protocol::ForbiddenRecord& record) { r.forbidden_library = record.library; }
  void operator()(const protocol::ProgressRecord&) {}
  void operator()(const protocol::ClockRecord&) {}
  void operator()(const protocol::ProfiledRecord& record) {
    if (!r.profiled) r.profiled = record;
  }
};

// Only lines stamped with this run's token count: a submission printing JSON cannot forge one.
Reports parse_reports(const std::vector<std::string>& lines, const std::string& token) {
  Reports r;
  for (const std::string& line : lines)
    if (const auto record = protocol::read_record(line, token)) std::visit(RecordCollector{r}, *record);
  return r;
}

void merge(Reports& into, const Reports& from) {
  for (const auto& [name, records] : from.correctness)
    into.correctness[name].insert(into.correctness[name].end(), records.begin(), records.end());
  for (const auto& [name, records] : from.performance)
    into.performance[name].insert(into.performance[name].end(), records.begin(), records.end());
}

// The lock files of the GPUs a run uses: its own, or (gpu < 0: a lab that runs on all of
// them) every GPU's, in order.
std::string gpu_locks(const GradeOptions& options, int gpu) {
  auto lock = [&](int g) { return (fs::path(options.gpu_lock_dir) / ("gpu-" + std::to_string(g) + ".lock")).string(); };
  if (gpu >= 0) return lock(gpu);
  std::string all = lock(0);
  for (int g = 1; g < options.gpu_count; ++g) all += ":" + lock(g);
  return all;
}

}  // namespace

std::string visible_devices(int first, int count, const char* inherited) {
  std::vector<std::string> listed;
  if (inherited != nullptr && *inherited != '\0') {
    std::stringstream list(inherited);
    for (std::string entry; std::getline(list, entry, ',');) listed.push_back(entry);
    if (std::size_t(first + count) > listed.size())
      throw std::invalid_argument("this batch's GPUs " + std::to_string(first) + ".." +
                                  std::to_string(first + count - 1) + " are not all in CUDA_VISIBLE_DEVICES=" +
                                  inherited + ": ask --gpus for as many as it lists at most");
  }
  std::string visible;
  for (int gpu = first; gpu < first + count; ++gpu)
    visible += (visible.empty() ? "" : ",") + (listed.empty() ? std::to_string(gpu) : listed[std::size_t(gpu)]);
  return visible;
}

std::vector<int> cpu_share(const std::vector<int>& ours, int gpu, int gpus) {
  if (gpus <= 1 || ours.size() < std::size_t(gpus)) return ours;
  const std::size_t begin = ours.size() * std::size_t(gpu) / std::size_t(gpus);
  const std::size_t end = ours.size() * std::size_t(gpu + 1) / std::size_t(gpus);
  return {ours.begin() + std::ptrdiff_t(begin), ours.begin() + std::ptrdiff_t(end)};
}

namespace {

std::vector<int> cpus_of_this_process() {
  cpu_set_t set;
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  return cpus;
}

}  // namespace

void RunnerClock::take(const labkit::protocol::ClockRecord& record) {
  const auto now = std::chrono::steady_clock::now();
  if (!record.counting && !stopped_since_) stopped_since_ = now;
  if (record.counting && stopped_since_) {
    stopped_seconds_ += std::chrono::duration<double>(now - *stopped_since_).count();
    stopped_since_.reset();
  }
}

double RunnerClock::stopped_seconds() const {
  if (!stopped_since_) return stopped_seconds_;
  return stopped_seconds_ + std::chrono::duration<double>(std::chrono::steady_clock::now() - *stopped_since_).count();
}

int time_limit(const LabSpec& lab, const GradeOptions& options) {
  return options.time_limit_seconds > 0 ? options.time_limit_seconds : lab.time_limit_seconds;
}

// The lab's runner (its checks) and its reference solution, as Meson builds them.
fs::path runner_program(const LabSpec& lab, const Toolchain& tc) {
  return fs::path(tc.build_root) / "labs" / ("lab-" + lab.dir + "-runner");
}
fs::path solution_module(const LabSpec& lab, const Toolchain& tc) {
  return fs::path(tc.build_root) / "labs" / ("lab-" + lab.dir + "-solution.so");
}

// Limits for a lab's runner. It is the kit's own code, and its files may pass the cap on a
// child's files: host buffers shared with the submission's process are memfds, and `grade
// export` writes whole arrays. The process that runs the submission gets that cap itself
// (HostProcess::start), so what it prints stays bounded.
ChildLimits runner_limits(int wall_seconds) {
  ChildLimits limits{wall_seconds, 2 * wall_seconds};
  limits.file_size_bytes = static_cast<long long>(RLIM_INFINITY);
  return limits;
}

// What every run of `context`'s checks passes the runner; a caller adds its own (a case, a tool).
protocol::RunnerArguments runner_arguments(const RunContext& context) {
  const auto& [lab, tc, options, lab_work, gpu, module, suites] = context;
  protocol::RunnerArguments arguments;
  arguments.student = module.string();
  arguments.reference = solution_module(lab, tc).string();
  arguments.dataset = lab.dataset;
  for (const PerformanceRubric& p : lab.performance)
    arguments.thresholds.push_back({p.case_name, p.zero_credit_ratio, p.full_credit_ratio, p.points});
  arguments.min_compute_capability = lab.min_compute_capability;
  arguments.min_gpus = lab.min_gpus;
  arguments.test_suite = suites;
  arguments.doctest = {"--no-intro=true"};
  arguments.forbidden_libraries = forbidden_library_files(lab);
  if (!options.calibration_dir.empty()) {
    arguments.calibration_dir = options.calibration_dir;
    arguments.kit_fingerprint = kit_fingerprint(lab, tc);
  }
  return arguments;
}

RunOutcome run_checks(const RunContext& context, const protocol::RunnerArguments& arguments,
                      const std::string& log_name, int wall_seconds, const RecordHandler& on_record) {
  const auto& [lab, tc, options, lab_work, gpu, module, suites] = context;
  std::vector<std::string> argv = {runner_program(lab, tc).string()};
  for (const std::string& argument : arguments.to_argv()) argv.push_back(argument);
  const std::string token = random_token();
  // The seed goes in the environment: other processes can read a command line.
  ChildRequest request{argv, {{protocol::env::run_seed, std::to_string(options.seed)}}, {protocol::env::secret},
                       (lab_work / log_name).string(), {}, true, token};
  RunnerClock clock;
  request.on_result_line = [&on_record, &token, &clock](const std::string& line) {
    const auto record = protocol::read_record(line, token);
    if (!record) return;
    if (const auto* tick = std::get_if<protocol::ClockRecord>(&*record)) clock.take(*tick);
    if (on_record) on_record(*record);
  };
  request.uncounted_seconds = [&clock] { return clock.stopped_seconds(); };
  const char* inherited = std::getenv("CUDA_VISIBLE_DEVICES");
  const int several = lab.min_gpus > 1 ? std::max(1, options.gpu_count) : 1;  // gpu < 0: from the first GPU
  request.environment["CUDA_VISIBLE_DEVICES"] =
      gpu >= 0 ? visible_devices(gpu, 1, inherited) : visible_devices(0, several, inherited);
  if (gpu >= 0) request.cpus = cpu_share(cpus_of_this_process(), gpu, options.gpu_count);
  if (!options.gpu_lock_dir.empty()) request.environment[protocol::env::gpu_lock] = gpu_locks(options, gpu);
  // Each of `modules:` sits beside the module: module-mpi.so, lab-NN-name-solution-mpi.so.
  for (const ExtraModule& extra : lab.modules)
    request.environment[protocol::module_variable(extra.name)] =
        (module.parent_path() / (module.stem().string() + "-" + extra.name + ".so")).string();
  RunOutcome run;
  run.child = run_child(request, runner_limits(wall_seconds));
  run.reports = parse_reports(run.child.result_lines, token);
  return run;
}

// After a crash, each case that had not reported runs again in a process of its own,
// so one bad case does not zero the rest of the lab. A case that still says nothing is
// recorded as failed with what happened to its process.
void rerun_missing(const RunContext& context, const labkit::Dataset& dataset, Reports& reports) {
  const LabSpec& lab = context.lab;
  const int per_case_seconds = std::max(30, time_limit(lab, context.options) / 4);
  auto rerun = [&](const std::string& name, auto& records) {
    if (records.count(name)) return;
    protocol::RunnerArguments arguments = runner_arguments(context);
    arguments.subcases = {name};
    RunOutcome alone = run_checks(context, arguments, "rerun-" + name + ".log", per_case_seconds);
    merge(reports, alone.reports);
    if (!records.count(name)) {
      typename std::decay_t<decltype(records)>::mapped_type::value_type silent;
      silent.case_name = name;
      silent.outcome = Outcome::failed;
      silent.message = "run on its own, the process " + alone.child.describe() + " before this case reported";
      records[name].push_back(silent);
    }
  };
  for (const labkit::Case& c : dataset.correctness) rerun(c.name, reports.correctness);
  if (context.options.performance)
    for (const PerformanceRubric& p : lab.performance) rerun(p.case_name, reports.performance);
}

// Every log the tool wrote for this run (one per host the runner started), in start order.
std::string read_tool_logs(const fs::path& folder, const std::string& tool) {
  std::vector<fs::path> logs;
  for (const auto& entry : fs::directory_iterator(folder))
    if (entry.path().filename().string().rfind(tool + "-", 0) == 0) logs.push_back(entry.path());
  std::sort(logs.begin(), logs.end());
  std::string text;
  for (const fs::path& log : logs) text += labkit::file_bytes(log.string()) + "\n";
  return text;
}

void remove_tool_logs(const fs::path& folder, const std::string& tool) {
  std::error_code ignored;
  fs::create_directories(folder, ignored);
  for (const auto& entry : fs::directory_iterator(folder))
    if (entry.path().filename().string().rfind(tool + "-", 0) == 0) fs::remove(entry.path(), ignored);
}

}  // namespace grade
