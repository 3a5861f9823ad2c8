#include "grader.h"

#include "intake.h"
#include "labkit/dataset.h"
#include "labkit/device.h"
#include "labkit/fingerprint.h"
#include "labkit/protocol.h"
#include "labkit/stats.h"
#include "labkit_build_config.h"
#include "process.h"
#include "profile.h"
#include "sanitize.h"

#include <sys/resource.h>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <iostream>
#include <functional>
#include <map>
#include <memory>
#include <set>

namespace fs = std::filesystem;
using nlohmann::json;
namespace protocol = labkit::protocol;
namespace exit_status = labkit::protocol::exit_status;

namespace grade {

namespace {

constexpr int build_time_limit_seconds = 300;
constexpr std::size_t build_log_shown_bytes = 5000;

struct Reports {
  std::map<std::string, std::vector<protocol::CorrectnessRecord>> correctness;  // case name → its records
  std::map<std::string, std::vector<protocol::PerformanceRecord>> performance;
  bool done = false;
  bool skipped = false;
  std::string skip_reason;
  std::string fault;
  std::string sandbox;            // what the submission's process was confined by
  std::string forbidden_library;  // loaded at run time despite the rubric
  json device;
  std::optional<protocol::ProfiledRecord> profiled;  // `grade profile`'s one call
};

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

std::string tail(const std::string& text, std::size_t bytes) {
  return text.size() <= bytes ? text : "[...]\n" + text.substr(text.size() - bytes);
}

// What one compiled module is made of: the lab's own (module.so), or one of its `modules:`.
struct ModuleSources {
  std::vector<std::string> files, nvcc_flags, libraries, forbidden;
  std::string output;  // its file name in the lab's work folder
};

ModuleSources lab_module(const LabSpec& lab) {
  return {lab.module_files(), lab.nvcc_flags, lab.link_libraries, lab.forbidden, "module.so"};
}

// Beside one of `modules:` that did not compile: what its cases say instead of running
// (labkit::why_ranks_cannot_run reads it).
fs::path failed_marker(const fs::path& lab_work, const ModuleSources& module) {
  return lab_work / (module.output + ".failed");
}

// The lab's own module, and each of `modules:` whose loader this build has. Where it has
// none (the kit found no MPI), a module left by an earlier build goes, so the checks see none.
std::vector<ModuleSources> modules_to_build(const LabSpec& lab, const Toolchain& tc, const fs::path& lab_work) {
  std::vector<ModuleSources> modules = {lab_module(lab)};
  for (const ExtraModule& extra : lab.modules) {
    ModuleSources sources{extra.files, extra.nvcc_flags, {}, extra.forbidden, "module-" + extra.name + ".so"};
    std::error_code ignored;
    if (fs::exists(fs::path(tc.build_root) / "labs" / extra.loader)) {
      modules.push_back(sources);
    } else {
      fs::remove(lab_work / sources.output, ignored);
      fs::remove(failed_marker(lab_work, sources), ignored);
    }
  }
  return modules;
}

// Stages only the declared student files, so a submission's own copy of the contract header
// is never used.
void stage_student_files(const LabSpec& lab, const std::string& student_dir, const fs::path& lab_work) {
  const fs::path staged = lab_work / "src";
  fs::remove_all(staged);
  fs::create_directories(staged);
  for (const std::string& file : lab.student_files)
    fs::copy_file(fs::path(student_dir) / file, staged / file, fs::copy_options::overwrite_existing);
}

// Compiles staged files into a module the runner (or a program it starts) loads.
bool build_module(const LabSpec& lab, const ModuleSources& module, const std::string& student_dir,
                  const Toolchain& tc, const fs::path& lab_work, std::string& log) {
  const fs::path staged = lab_work / "src";
  std::vector<std::string> argv = {tc.nvcc, "-shared", "-Xcompiler", "-fPIC", "-O3"};
  argv.insert(argv.end(), tc.cuda_flags.begin(), tc.cuda_flags.end());
  argv.insert(argv.end(), module.nvcc_flags.begin(), module.nvcc_flags.end());  // lab.yaml `build:`
  argv.push_back("-I" + (fs::path(tc.source_root) / "labs" / lab.dir).string());
  for (const std::string& file : module.files) argv.push_back((staged / file).string());
  for (const std::string& library : module.libraries) argv.push_back("-l" + library);
  argv.insert(argv.end(), {"-o", (lab_work / module.output).string()});

  const std::string log_name = module.output == "module.so" ? "build.log" : "build-" + module.output + ".log";
  ChildRequest request{argv, {}, {protocol::env::secret}, (lab_work / log_name).string(), {}, false, {}};
  const ChildOutcome outcome = run_child(request, {build_time_limit_seconds, 2 * build_time_limit_seconds});
  log = tail(outcome.output_tail, build_log_shown_bytes);
  // Name the student's own files in the diagnostics, not the staged copies.
  const std::string staged_prefix = staged.string() + "/";
  for (std::size_t at; (at = log.find(staged_prefix)) != std::string::npos;)
    log.replace(at, staged_prefix.size(), (fs::path(student_dir) / "").string());
  if (outcome.timed_out) log = "the compiler " + outcome.describe() + "\n" + log;
  return outcome.exit_code == 0 && !outcome.timed_out;
}

std::string joined(const std::vector<std::string>& items, const std::string& separator) {
  std::string text;
  for (const std::string& item : items) text += (text.empty() ? "" : separator) + item;
  return text;
}

// The lab's own module must compile, or nothing is graded: false, with the compiler's
// messages in `log`. One of `modules:` that does not compile costs only its own cases (lab 13's
// part 2 must not take part 1 with it): its module is removed, a marker says why, and its
// messages go in `log`, which stays empty when everything compiled (warnings are not shown).
bool build_modules(const LabSpec& lab, const std::string& student_dir, const Toolchain& tc, const fs::path& lab_work,
                   std::string& log) {
  stage_student_files(lab, student_dir, lab_work);
  const std::vector<ModuleSources> modules = modules_to_build(lab, tc, lab_work);
  if (!build_module(lab, modules.front(), student_dir, tc, lab_work, log)) return false;
  log.clear();
  for (auto module = modules.begin() + 1; module != modules.end(); ++module) {
    std::error_code ignored;
    fs::remove(failed_marker(lab_work, *module), ignored);
    std::string messages;
    if (build_module(lab, *module, student_dir, tc, lab_work, messages)) continue;
    fs::remove(lab_work / module->output, ignored);
    const std::string why = joined(module->files, ", ") + " did not compile";
    std::ofstream(failed_marker(lab_work, *module)) << why;
    log += why + " (its cases are not run; the rest of the lab is graded):\n" + messages;
  }
  return true;
}

// Signs of a library in the staged sources (an include) or in the compiled module (its
// mangled namespace, or a link to it).
struct LibrarySigns {
  const char* name;
  std::regex include;
  std::vector<std::string> in_module;
};

const std::vector<LibrarySigns>& library_signs() {
  static const std::vector<LibrarySigns> signs = {
      {"cub", std::regex(R"(#\s*include\s*[<"]cub/)"), {"N3cub"}},
      // CUB's own templates instantiate Thrust internals, so Thrust is recognised by its include.
      {"thrust", std::regex(R"(#\s*include\s*[<"]thrust/)"), {}},
      {"cublas", std::regex(R"(#\s*include\s*[<"]cublas_)"), {"libcublas.so", "cublasSgemm", "cublasGemmEx"}},
      {"cublasLt", std::regex(R"(#\s*include\s*[<"]cublasLt)"), {"libcublasLt", "cublasLtMatmul"}},
      {"cutlass", std::regex(R"(#\s*include\s*[<"]cutlass/)"), {"N7cutlass"}},
      {"cute", std::regex(R"(#\s*include\s*[<"]cute/)"), {"N4cute"}},
      {"nccl", std::regex(R"(#\s*include\s*[<"]nccl)"), {"libnccl", "ncclAllReduce", "ncclReduceScatter", "ncclCommInit"}},
  };
  return signs;
}

// The first forbidden library a module's rubric names that the submission uses, with where
// it was seen; empty when none.
std::string forbidden_use(const ModuleSources& module, const fs::path& lab_work) {
  auto forbidden = [&](const LibrarySigns& library) {
    return std::find(module.forbidden.begin(), module.forbidden.end(), library.name) != module.forbidden.end();
  };
  // Includes first: they name the library the student chose (Thrust's code contains CUB's).
  for (const LibrarySigns& library : library_signs())
    for (const std::string& file : module.files)
      if (forbidden(library) && std::regex_search(labkit::file_bytes((lab_work / "src" / file).string()), library.include))
        return std::string(library.name) + ", included in " + file;
  const std::string compiled = labkit::file_bytes((lab_work / module.output).string());
  for (const LibrarySigns& library : library_signs())
    for (const std::string& sign : library.in_module)
      if (forbidden(library) && compiled.find(sign) != std::string::npos)
        return std::string(library.name) + ", seen in the compiled code (" + sign + ")";
  return {};
}

std::string forbidden_use(const LabSpec& lab, const Toolchain& tc, const fs::path& lab_work) {
  for (const ModuleSources& module : modules_to_build(lab, tc, lab_work)) {
    if (!fs::exists(lab_work / module.output)) continue;  // did not compile: it never runs
    if (const std::string found = forbidden_use(module, lab_work); !found.empty()) return found;
  }
  return {};
}

// The shared libraries of the rubric's forbidden ones, as the host's memory map names them:
// the runner stops any call after which one of them is mapped.
std::vector<std::string> forbidden_library_files(const LabSpec& lab) {
  static const std::map<std::string, std::string> files = {{"cublas", "libcublas"}, {"cublasLt", "libcublasLt"}, {"nccl", "libnccl"}};
  std::vector<std::string> list;
  for (const std::string& name : lab.forbidden)
    if (files.count(name)) list.push_back(files.at(name));
  return list;
}

// The lab's runner (its checks) and its reference solution, as Meson builds them.
fs::path runner_program(const LabSpec& lab, const Toolchain& tc) {
  return fs::path(tc.build_root) / "labs" / ("lab-" + lab.dir + "-runner");
}
fs::path solution_module(const LabSpec& lab, const Toolchain& tc) {
  return fs::path(tc.build_root) / "labs" / ("lab-" + lab.dir + "-solution.so");
}

// What a lab's reference timings depend on, by source: the harness, the lab's checks and
// rubric, its reference solution, its dataset, and the compiler flags. A rebuild of the same
// sources keeps the calibration cache; any edit starts it over.
std::string kit_fingerprint(const LabSpec& lab, const Toolchain& tc) {
  std::vector<std::string> files;
  const fs::path root(tc.source_root);
  for (const fs::path& folder : {root / "harness" / "src", root / "harness" / "include" / "labkit", root / "labs" / lab.dir,
                                 root / "solutions" / lab.dir})
    for (const auto& entry : fs::directory_iterator(folder))
      if (entry.is_regular_file()) files.push_back(entry.path().string());
  std::sort(files.begin(), files.end());
  files.push_back(lab.dataset);
  std::string flags;
  for (const std::string& flag : tc.cuda_flags) flags += flag + " ";
  return labkit::hex(labkit::hash_bytes(flags, labkit::hash_files(files)));
}

int time_limit(const LabSpec& lab, const GradeOptions& options) {
  return options.time_limit_seconds > 0 ? options.time_limit_seconds : lab.time_limit_seconds;
}

struct RunOutcome {
  ChildOutcome child;
  Reports reports;
};

// What every run of one lab's checks shares.
struct RunContext {
  const LabSpec& lab;
  const Toolchain& tc;
  const GradeOptions& options;
  fs::path lab_work;
  int gpu;
  fs::path module;  // what the host runs: the submission's, or the reference for calibration
  std::string suites;
};

using RecordHandler = std::function<void(const protocol::Record&)>;

// Limits for a lab's runner. It is the kit's own code, and its files may pass the cap on a
// child's files: host buffers shared with the submission's process are memfds, and `grade
// export` writes whole arrays. The process that runs the submission gets that cap itself
// (HostProcess::start), so what it prints stays bounded.
ChildLimits runner_limits(int wall_seconds) {
  ChildLimits limits{wall_seconds, 2 * wall_seconds};
  limits.file_size_bytes = static_cast<long long>(RLIM_INFINITY);
  return limits;
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

// What every run of `context`'s checks passes the runner; a caller adds its own (a case, a tool).
protocol::RunnerArguments runner_arguments(const RunContext& context) {
  const auto& [lab, tc, options, lab_work, gpu, module, suites] = context;
  protocol::RunnerArguments arguments;
  arguments.student = module.string();
  arguments.reference = solution_module(lab, tc).string();
  arguments.dataset = lab.dataset;
  arguments.rubric = (fs::path(tc.source_root) / "labs" / lab.dir / "lab.yaml").string();
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
                      const std::string& log_name, int wall_seconds, const RecordHandler& on_record = {}) {
  const auto& [lab, tc, options, lab_work, gpu, module, suites] = context;
  std::vector<std::string> argv = {runner_program(lab, tc).string()};
  for (const std::string& argument : arguments.to_argv()) argv.push_back(argument);
  const std::string token = random_token();
  // The seed goes in the environment: other processes can read a command line.
  ChildRequest request{argv, {{protocol::env::run_seed, std::to_string(options.seed)}}, {protocol::env::secret},
                       (lab_work / log_name).string(), {}, true, token};
  if (on_record)
    request.on_result_line = [&on_record, &token](const std::string& line) {
      if (const auto record = protocol::read_record(line, token)) on_record(*record);
    };
  if (gpu >= 0) request.environment["CUDA_VISIBLE_DEVICES"] = std::to_string(gpu);
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

double correctness_share(const LabSpec& lab, std::size_t case_count) {
  return case_count == 0 ? 0 : lab.correctness_points / double(case_count);
}

void score_correctness(const LabSpec& lab, const labkit::Dataset& dataset, const Reports& reports,
                       const std::string& run_problem, LabResult& result) {
  const double share = correctness_share(lab, dataset.correctness.size());
  for (const labkit::Case& c : dataset.correctness) {
    CaseResult cr{c.name, "correctness", c.hidden};
    cr.max_points = share;
    const auto found = reports.correctness.find(c.name);
    const std::size_t count = found == reports.correctness.end() ? 0 : found->second.size();
    if (count == 0) {
      // Not run when the run (or the build) says why; a case missing from a run that finished
      // is a fault of the checks, and never passes.
      cr.outcome = run_problem.empty() ? Outcome::failed : Outcome::not_run;
      cr.message = "no result: " + (run_problem.empty() ? "the checks never reached this case" : run_problem);
    } else if (count > 1) {
      cr.outcome = Outcome::failed;
      cr.message = "reported " + std::to_string(count) + " times: results not trusted";
    } else {
      cr.outcome = found->second[0].outcome;
      cr.message = found->second[0].message;
    }
    cr.points = cr.passed() ? share : 0;
    result.cases.push_back(cr);
  }
}

// The timing floor: no honest implementation reads its input faster than the measured
// bandwidth allows; 10% over it leaves room for measurement noise.
bool faster_than_memory(const json& record) {
  const double peak = record.value("peak_read_gbps", 0.0);
  return peak > 0 && record["student"].value("gbps", 0.0) > 1.10 * peak;
}

// The compute floor: no kernel does a case's floating-point operations faster than every
// FP32 lane of the GPU at its highest clock; 5% over it leaves room for clock rounding.
bool faster_than_compute(const json& record) {
  const double flops = record.value("flops", 0.0), peak_gflops = record.value("peak_fp32_gflops", 0.0);
  const double ms = record["student"].value("median_ms", 0.0);
  return flops > 0 && peak_gflops > 0 && ms > 0 && flops / (ms * 1e6) > 1.05 * peak_gflops;
}

// The submission's process reported a time our clock cannot back: work hidden on another
// stream, or a forged event time. The bound from our clock is what was scored.
std::string unconfirmed_message(const json& student) {
  char text[400];
  std::snprintf(text, sizeof text,
                "your process reported %.4f ms, but the grader's clock saw at least %.4f ms of work per call "
                "(work outside the stream passed in, or a time that was not measured): timed by the grader's clock",
                student.value("reported_ms", 0.0), student.value("median_ms", 0.0));
  return text;
}

void score_performance(const LabSpec& lab, const Reports& reports, const std::string& run_problem,
                       LabResult& result) {
  for (const PerformanceRubric& rubric : lab.performance) {
    CaseResult cr{rubric.case_name, "performance"};
    cr.max_points = rubric.points;
    const auto found = reports.performance.find(rubric.case_name);
    if (found == reports.performance.end() || found->second.size() != 1) {
      const bool missing = found == reports.performance.end();
      cr.outcome = missing ? Outcome::not_run : Outcome::failed;
      cr.message = missing ? "no result: " + (run_problem.empty() ? "not measured" : run_problem)
                           : "reported more than once: results not trusted";
      result.cases.push_back(cr);
      continue;
    }
    const protocol::PerformanceRecord& reported = found->second[0];
    if (reported.outcome == Outcome::not_run) {  // not timed: a correctness case failed, or no MPI
      cr.message = reported.message;
      result.cases.push_back(cr);
      continue;
    }
    const json& record = reported.measurement;
    cr.timing = record;
    const bool timed = reported.outcome == Outcome::passed && record.contains("ratio");
    cr.outcome = timed ? Outcome::passed : reported.outcome == Outcome::hung ? Outcome::hung : Outcome::failed;
    if (!timed) {
      cr.message = "output wrong after timing, so no speed credit: " + reported.message;
    } else {
      const double noise = labkit::ratio_noise(record["student"].value("relative_error", 0.0),
                                               record["reference"].value("relative_error", 0.0));
      cr.points = labkit::ratio_points(record["ratio"].get<double>(), rubric.zero_credit_ratio,
                                       rubric.full_credit_ratio, rubric.points, noise);
      if (faster_than_memory(record)) {
        cr.points = 0;
        cr.outcome = Outcome::failed;
        cr.message = "faster than this GPU's memory can deliver the bytes the task must read: not credited "
                     "(is work skipped, or an earlier answer reused?)";
      } else if (faster_than_compute(record)) {
        cr.points = 0;
        cr.outcome = Outcome::failed;
        cr.message = "faster than this GPU's FP32 units can do the task's arithmetic: not credited "
                     "(is work skipped, or done where the grader's clock was not looking?)";
      }
      if (!record["student"].value("confirmed", true))
        cr.message = unconfirmed_message(record["student"]);
      // The lab's own advice on a slow time (measure_performance's hint), after ours.
      if (const std::string hint = record.value("hint", ""); !hint.empty())
        cr.message += (cr.message.empty() ? "" : "; ") + ("hint: " + hint);
    }
    result.cases.push_back(cr);
  }
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

// What a person at a terminal sees while a lab runs: one status line on stderr, rewritten in
// place, and gone when the lab is done. Off, it prints nothing (CI logs, batches, pipes).
class LiveLine {
public:
  explicit LiveLine(bool on) : on_(on) {}
  ~LiveLine() { clear(); }
  LiveLine(const LiveLine&) = delete;
  LiveLine& operator=(const LiveLine&) = delete;

  void show(const std::string& text) {
    if (!on_) return;
    constexpr std::size_t width = 100;  // fits a terminal without wrapping, which would break \r
    std::fprintf(stderr, "\r\033[K%s", text.substr(0, width).c_str());
    std::fflush(stderr);
    shown_ = true;
  }
  void clear() {
    if (!on_ || !shown_) return;
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
    shown_ = false;
  }

private:
  bool on_;
  bool shown_ = false;
};

std::string lab_label(const LabSpec& lab) { return "lab " + lab.id + " " + lab.name; }

// Turns the runner's progress records into "case k of n" and "timing case X" lines.
RecordHandler case_progress(LiveLine& live, const LabSpec& lab, std::size_t correctness_cases) {
  auto seen = std::make_shared<std::set<std::string>>();
  return [&live, &lab, correctness_cases, seen](const protocol::Record& record) {
    const auto* progress = std::get_if<protocol::ProgressRecord>(&record);
    if (progress == nullptr) return;
    const std::string& name = progress->case_name;
    const std::string& stage = progress->stage;
    if (progress->kind == "correctness") {
      seen->insert(name);
      live.show(lab_label(lab) + ": case " + std::to_string(seen->size()) + " of " +
                std::to_string(correctness_cases) + " (" + name + ")");
    } else {
      live.show(lab_label(lab) + ": " + stage + " case " + name);
    }
  };
}

constexpr std::size_t max_sanitized_cases = 3;

// A case that hung would hang again, and for far longer under a tool: it is left out, as is
// one that could not run.
bool worth_sanitizing(const CaseResult& c) { return c.kind == "correctness" && c.outcome == Outcome::failed; }

std::vector<std::string> cases_to_sanitize(const LabResult& result, SanitizeWhen when) {
  std::vector<std::string> cases;
  for (const CaseResult& c : result.cases)
    if (worth_sanitizing(c) && cases.size() < max_sanitized_cases) cases.push_back(c.name);
  if (cases.empty() && when == SanitizeWhen::always)
    for (const CaseResult& c : result.cases)
      if (c.kind == "correctness" && c.ran() && cases.size() < max_sanitized_cases) cases.push_back(c.name);
  return cases;
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

// The runner again, on `cases` only, with the submission's host under compute-sanitizer's
// `tool`. The call limit grows by the tool's slowdown; what the tool says of itself (a crash,
// no report at all, a timeout) is the tool's failure, never the student's.
SanitizerRun run_sanitizer(const RunContext& checking, const std::string& sanitizer, const std::string& tool,
                           const std::vector<std::string>& cases) {
  SanitizerRun run{tool, cases};
  const fs::path logs = checking.lab_work / "sanitizer";
  remove_tool_logs(logs, tool);
  protocol::RunnerArguments arguments = runner_arguments(checking);
  arguments.subcases = cases;
  arguments.tool_slowdown = int(sanitize::slowdown(tool));
  arguments.host_wrapper = sanitize::command(sanitizer, tool, (logs / (tool + "-{start}.log")).string());
  const int wall_seconds = time_limit(checking.lab, checking.options);
  const RunOutcome outcome = run_checks(checking, arguments, "sanitize-" + tool + ".log", wall_seconds);
  const std::string text = read_tool_logs(logs, tool);
  const sanitize::Parsed parsed = sanitize::parse(tool, text, checking.lab.student_files);
  run.findings = parsed.findings;
  run.errors_reported = parsed.errors_reported;
  run.kit_findings = parsed.kit_findings;
  run.tool_problem = parsed.tool_problem;
  if (run.tool_problem.empty() && outcome.child.timed_out)
    run.tool_problem = "the checks " + outcome.child.describe() + " under " + tool + ", which slows kernels down";
  else if (run.tool_problem.empty() && text.find_first_not_of(" \n") == std::string::npos)
    run.tool_problem = "it wrote no report; the checks ended with " + outcome.child.describe();
  return run;
}

std::vector<SanitizerRun> sanitize_lab(const RunContext& context, const std::vector<std::string>& cases,
                                       LiveLine& live) {
  const RunContext checking{context.lab, context.tc, context.options, context.lab_work, context.gpu,
                            context.module, "correctness"};
  const std::string sanitizer = sanitize::find_tool("compute-sanitizer", context.tc.nvcc);
  if (sanitizer.empty())
    return {{"compute-sanitizer", cases, {}, 0, 0,
             "compute-sanitizer was not found (it comes with the CUDA toolkit, beside nvcc)"}};
  std::vector<SanitizerRun> runs;
  for (const std::string& tool : context.lab.sanitize_tools) {
    live.show(lab_label(context.lab) + ": compute-sanitizer " + tool + " on " + std::to_string(cases.size()) +
              " case(s)");
    if (!context.options.live_progress)
      std::fprintf(stderr, "%s: compute-sanitizer %s on %s\n", lab_label(context.lab).c_str(), tool.c_str(),
                   joined(cases, ", ").c_str());
    runs.push_back(run_sanitizer(checking, sanitizer, tool, cases));
  }
  return runs;
}

// One side of `grade profile`: the runner on one performance case with --profile, the host
// (running `context.module`) under ncu. Fills `kernels`, or returns why it could not.
struct ProfiledSide {
  std::vector<profile::Kernel> kernels;
  std::string problem;       // ncu could not profile (permission, device): exit 3
  std::string case_problem;  // the call itself failed or never ran
  bool output_wrong = false;
};

ProfiledSide profile_side(const RunContext& context, const std::string& ncu, const std::string& case_name,
                          const std::string& side, bool core_only) {
  const fs::path logs = context.lab_work / "profile";
  remove_tool_logs(logs, side);
  protocol::RunnerArguments arguments = runner_arguments(context);
  arguments.subcases = {case_name};
  arguments.profile = arguments.time_failed = true;
  arguments.tool_slowdown = 50;
  arguments.host_wrapper = profile::command(ncu, (logs / (side + "-{start}.log")).string(), core_only);
  constexpr int wall_seconds = 600;
  const RunOutcome run = run_checks(context, arguments, "profile-" + side + ".log", wall_seconds);
  const std::string output = read_tool_logs(logs, side) + "\n" + run.child.output_tail;
  if (!core_only && profile::rejected_a_metric(output)) return profile_side(context, ncu, case_name, side, true);
  ProfiledSide result;
  if (run.reports.skipped) result.problem = "not run: " + run.reports.skip_reason;
  if (result.problem.empty()) result.problem = profile::problem(output);
  if (!result.problem.empty()) return result;
  result.kernels = profile::parse_csv(output);
  if (!run.reports.profiled)
    result.case_problem = "the case did not run (the checks " + run.child.describe() + "):\n" + run.child.output_tail;
  else if (!run.reports.profiled->output_ok)
    result.output_wrong = true, result.case_problem = run.reports.profiled->message;
  return result;
}

std::string chosen_case(const LabSpec& lab, const std::string& case_name) {
  if (lab.performance.empty()) throw std::invalid_argument("lab " + lab.id + " has no performance case to profile");
  if (case_name.empty()) return lab.performance.front().case_name;
  for (const PerformanceRubric& p : lab.performance)
    if (p.case_name == case_name) return case_name;
  std::string known;
  for (const PerformanceRubric& p : lab.performance) known += " " + p.case_name;
  throw std::invalid_argument("lab " + lab.id + " has no performance case '" + case_name + "'; it has:" + known);
}

}  // namespace

Toolchain configured_toolchain() {
  return {LABKIT_SOURCE_ROOT, LABKIT_BUILD_ROOT, LABKIT_NVCC, {LABKIT_CUDA_FLAGS}};
}

std::string find_student_dir(const LabSpec& lab, const std::string& base) {
  // A symbolic link below base is never looked through (it could lead to the kit's solutions).
  // A linked lab folder is returned only when no real folder holds the files, so that
  // build_lab refuses it by name instead of saying "not found".
  std::string linked;
  for (const fs::path& relative : {fs::path("labs") / lab.dir, fs::path(lab.dir), fs::path()}) {
    if (const fs::path link = first_symlink(base, relative); !link.empty()) {
      if (linked.empty()) linked = link.string();
    } else if (holds_all(fs::path(base) / relative, lab.student_files)) {
      return (fs::path(base) / relative).string();
    }
  }
  return linked;
}

static LabResult empty_result(const LabSpec& lab) { return LabResult{lab.id, lab.name, lab.title}; }

// Scores a lab that never ran: every case at zero, with the reason as its message.
static void score_unrun(const LabSpec& lab, LabResult& result) {
  score_correctness(lab, labkit::load_dataset(lab.dataset), {}, result.note, result);
  score_performance(lab, {}, result.note, result);
  add_totals(result);
}

bool build_lab(const LabJob& job, const Toolchain& toolchain, LabResult& result) {
  const LabSpec& lab = *job.lab;
  result = empty_result(lab);
  fs::create_directories(job.work_dir);
  if (job.student_dir.empty()) {
    result.status = LabStatus::missing_files;
    result.note = "student files not found (expected: " + lab.student_files.front() + "): lab not graded";
  } else if (const std::string refused = student_files_problem(job.student_dir, lab.student_files);
             !refused.empty()) {
    result.status = LabStatus::missing_files;
    result.note = refused + " (lab not graded)";
  } else if (!build_modules(lab, job.student_dir, toolchain, job.work_dir, result.build_log)) {
    result.status = LabStatus::build_failed;
    result.note = "your files did not compile; the compiler's messages are below";
  } else if (const std::string found = forbidden_use(lab, toolchain, job.work_dir); !found.empty()) {
    result.status = LabStatus::forbidden;
    result.note = "uses a forbidden library, " + found + "; this lab teaches that kernel, so write it yourself";
  }
  if (result.status == LabStatus::graded) return true;
  score_unrun(lab, result);
  return false;
}

LabResult not_graded(const LabSpec& lab, LabStatus status, const std::string& note) {
  LabResult result = empty_result(lab);
  result.status = status;
  result.note = note;
  score_unrun(lab, result);
  return result;
}

void run_lab(const LabJob& job, const Toolchain& toolchain, const GradeOptions& options, int gpu,
             LabResult& result) {
  const LabSpec& lab = *job.lab;
  const labkit::Dataset dataset = labkit::load_dataset(lab.dataset);
  const RunContext context{lab, toolchain, options, job.work_dir, gpu, fs::path(job.work_dir) / "module.so",
                           options.performance ? "correctness,performance" : "correctness"};
  LiveLine live(options.live_progress);
  live.show(lab_label(lab) + ": starting the checks");
  RunOutcome run = run_checks(context, runner_arguments(context), "run.log", time_limit(lab, options),
                              case_progress(live, lab, dataset.correctness.size()));
  result.run_log = run.child.output_tail;
  result.device = run.reports.device;
  std::string problem;
  if (run.reports.skipped || run.child.exit_code == exit_status::skipped) {
    result.status = LabStatus::not_run;
    result.note = "not run: " + (run.reports.skip_reason.empty() ? "no CUDA device" : run.reports.skip_reason);
    problem = result.note;
  } else if (!run.reports.fault.empty()) {
    result.status = LabStatus::kit_fault;
    result.note = "the lab's checks could not start: " + run.reports.fault;
    problem = result.note;
  } else if (run.child.timed_out) {
    // A hang would hang again case by case: the cases that had not reported score zero.
    result.status = LabStatus::run_failed;
    result.note = "the checks " + run.child.describe() + " (a kernel or host loop that never ends?)";
    problem = "the process " + run.child.describe() + " before this case reported";
  } else if (!run.reports.done || run.child.signal != 0) {
    result.status = LabStatus::run_failed;
    const std::string what = run.child.exit_code == exit_status::context_lost
                                 ? "hit a CUDA error that left the GPU unusable (see the failed case)"
                                 : run.child.describe();
    result.note = "the checks stopped early: the process " + what +
                  "; cases that had not reported were run again one at a time";
    problem = "the process " + what + " before this case reported";
    live.show(lab_label(lab) + ": running the cases that did not report again, one at a time");
    rerun_missing(context, dataset, run.reports);
  }
  score_correctness(lab, dataset, run.reports, problem, result);
  score_performance(lab, run.reports, problem, result);
  if (!run.reports.sandbox.empty()) result.device["isolation"] = run.reports.sandbox;
  if (!run.reports.forbidden_library.empty()) {
    result.status = LabStatus::forbidden;
    result.note = "your code loaded " + run.reports.forbidden_library +
                  " at run time, a library this lab forbids: this lab teaches that kernel, so write it yourself";
    for (CaseResult& c : result.cases) c.points = 0;
  }
  add_totals(result);
  const bool judged = result.status == LabStatus::graded || result.status == LabStatus::run_failed;
  if (judged && options.sanitize != SanitizeWhen::never)
    if (const auto cases = cases_to_sanitize(result, options.sanitize); !cases.empty())
      result.sanitizer = sanitize_lab(context, cases, live);
}

int profile_lab(const LabJob& job, const std::string& case_name, const Toolchain& toolchain,
                const GradeOptions& options) {
  const LabSpec& lab = *job.lab;
  const std::string chosen = chosen_case(lab, case_name);
  const std::string ncu = sanitize::find_tool("ncu", toolchain.nvcc);
  if (ncu.empty()) {
    std::cerr << "grade profile: Nsight Compute's `ncu` is not on PATH (nor beside nvcc): install Nsight Compute "
                 "(it comes with the CUDA toolkit) or add its folder to PATH\n";
    return exit_status::not_run;
  }
  LabResult built;
  if (!build_lab(job, toolchain, built)) {
    std::cerr << "grade profile: " << built.note << "\n" << built.build_log << "\n";
    return exit_status::failed;
  }
  GradeOptions untimed = options;
  untimed.calibration_dir.clear();
  const fs::path reference = solution_module(lab, toolchain);
  const fs::path work(job.work_dir);
  std::cerr << "grade profile: lab " << lab.id << ", case " << chosen << ", under " << ncu << " (a minute or two)...\n";
  const ProfiledSide yours =
      profile_side({lab, toolchain, untimed, work, -1, work / "module.so", "performance"}, ncu, chosen, "yours", false);
  if (!yours.problem.empty()) {
    std::cerr << "grade profile: " << yours.problem << "\n";
    return exit_status::not_run;
  }
  const ProfiledSide theirs =
      profile_side({lab, toolchain, untimed, work, -1, reference, "performance"}, ncu, chosen, "reference", false);
  if (!theirs.problem.empty()) {
    std::cerr << "grade profile: " << theirs.problem << "\n";
    return exit_status::not_run;
  }
  if (!yours.case_problem.empty())
    std::cout << (yours.output_wrong ? "Note: your output was wrong in this call: " : "Note: ") << yours.case_problem
              << "\n\n";
  std::cout << profile::side_by_side(yours.kernels, theirs.kernels,
                                     "Lab " + lab.id + " " + lab.name + ", case " + chosen +
                                         ": one call each under Nsight Compute");
  return yours.kernels.empty() || !yours.case_problem.empty() ? exit_status::failed : exit_status::ok;
}

LabResult grade_lab(const LabJob& job, const Toolchain& toolchain, const GradeOptions& options) {
  LabResult result;
  if (build_lab(job, toolchain, result)) run_lab(job, toolchain, options, -1, result);
  return result;
}

std::vector<json> calibrate_lab(const LabSpec& lab, const Toolchain& toolchain, const GradeOptions& options) {
  const fs::path work = fs::path(toolchain.build_root) / "grade" / "calibrate" / lab.dir;
  fs::create_directories(work);
  const fs::path reference = solution_module(lab, toolchain);
  const RunContext context{lab, toolchain, options, work, -1, reference, "performance"};
  protocol::RunnerArguments arguments = runner_arguments(context);
  arguments.calibrate = true;
  RunOutcome run = run_checks(context, arguments, "calibrate.log", time_limit(lab, options));
  if (run.reports.skipped) throw std::runtime_error("not run: " + run.reports.skip_reason);
  std::vector<json> records;
  for (const auto& [name, found] : run.reports.performance)
    for (const protocol::PerformanceRecord& record : found) records.push_back(record.measurement);
  if (records.empty()) throw std::runtime_error("the runner measured nothing: " + run.child.output_tail);
  return records;
}

int export_case(const LabSpec& lab, const std::string& case_name, const Toolchain& toolchain,
                std::uint64_t seed, const std::string& out_dir) {
  const labkit::Dataset dataset = labkit::load_dataset(lab.dataset);
  bool known = false;
  for (const labkit::Case& c : dataset.correctness) known = known || c.name == case_name;
  if (!known) throw std::invalid_argument("lab " + lab.id + " has no correctness case '" + case_name + "'");
  protocol::RunnerArguments arguments;
  arguments.student = arguments.reference = solution_module(lab, toolchain).string();
  arguments.dataset = lab.dataset;
  arguments.seed = seed;
  arguments.export_dir = out_dir;
  arguments.test_suite = "correctness";
  arguments.subcases = {case_name};
  arguments.doctest = {"--no-intro=true"};
  std::vector<std::string> argv = {runner_program(lab, toolchain).string()};
  for (const std::string& argument : arguments.to_argv()) argv.push_back(argument);
  fs::create_directories(out_dir);
  const ChildRequest request{argv, {}, {protocol::env::secret}, (fs::path(out_dir) / "export.log").string()};
  const ChildOutcome outcome = run_child(request, runner_limits(lab.time_limit_seconds));
  if (outcome.exit_code != exit_status::ok) {
    std::cerr << outcome.output_tail << "\n";
    return outcome.exit_code == exit_status::skipped ? exit_status::not_run : exit_status::kit_fault;
  }
  std::cout << "wrote " << (fs::path(out_dir) / case_name).string() << "/*.npy (open with numpy.load)\n";
  return exit_status::ok;
}

}  // namespace grade
