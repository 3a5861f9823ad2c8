#include "grader.h"

#include "intake.h"
#include "labkit/dataset.h"
#include "labkit/device.h"
#include "labkit/fingerprint.h"
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

namespace grade {

namespace {

constexpr int build_time_limit_seconds = 300;
constexpr std::size_t build_log_shown_bytes = 5000;

struct Reports {
  std::map<std::string, std::vector<json>> correctness;  // case name → its records
  std::map<std::string, std::vector<json>> performance;
  bool done = false;
  bool skipped = false;
  std::string skip_reason;
  std::string fault;
  std::string sandbox;            // what the submission's process was confined by
  std::string forbidden_library;  // loaded at run time despite the rubric
  json device;
};

// Only lines stamped with this run's token count: a submission printing JSON cannot forge one.
Reports parse_reports(const std::vector<std::string>& lines, const std::string& token) {
  Reports r;
  for (const std::string& line : lines) {
    const json record = json::parse(line, nullptr, false);
    if (record.is_discarded() || record.value("token", "") != token) continue;
    const std::string type = record.value("type", "");
    if (type == "correctness") r.correctness[record.value("case", "")].push_back(record);
    if (type == "performance" || type == "calibration") r.performance[record.value("case", "")].push_back(record);
    if (type == "done") r.done = true;
    if (type == "device") r.device = record, r.device.erase("token"), r.device.erase("type");
    if (type == "skipped") r.skipped = true, r.skip_reason = record.value("reason", "");
    if (type == "fault") r.fault = record.value("message", "");
    if (type == "sandbox") r.sandbox = record.value("description", "");
    if (type == "forbidden") r.forbidden_library = record.value("library", "");
  }
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
  ChildRequest request{argv, {}, {"LABKIT_SECRET"}, (lab_work / log_name).string(), {}, false, {}};
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
std::string forbidden_library_files(const LabSpec& lab) {
  static const std::map<std::string, std::string> files = {{"cublas", "libcublas"}, {"cublasLt", "libcublasLt"}, {"nccl", "libnccl"}};
  std::string list;
  for (const std::string& name : lab.forbidden)
    if (files.count(name)) list += (list.empty() ? "" : ",") + files.at(name);
  return list;
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

using RecordHandler = std::function<void(const json&)>;

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

RunOutcome run_checks(const RunContext& context, const std::vector<std::string>& filters,
                      const std::string& log_name, int wall_seconds, const RecordHandler& on_record = {}) {
  const auto& [lab, tc, options, lab_work, gpu, module, suites] = context;
  const fs::path build_labs = fs::path(tc.build_root) / "labs";
  std::vector<std::string> argv = {
      (build_labs / ("lab-" + lab.dir + "-runner")).string(),
      "--student", module.string(),
      "--reference", (build_labs / ("lab-" + lab.dir + "-solution.so")).string(),
      "--dataset", lab.dataset,
      "--rubric", (fs::path(tc.source_root) / "labs" / lab.dir / "lab.yaml").string(),
      "--min-compute-capability", lab.min_compute_capability, "--min-gpus", std::to_string(lab.min_gpus),
      "--test-suite=" + suites, "--no-intro=true"};
  if (const std::string libraries = forbidden_library_files(lab); !libraries.empty())
    argv.push_back("--forbidden-libraries=" + libraries);
  if (!options.calibration_dir.empty()) {
    argv.push_back("--calibration=" + options.calibration_dir);
    argv.push_back("--kit-fingerprint=" + kit_fingerprint(lab, tc));
  }
  argv.insert(argv.end(), filters.begin(), filters.end());
  const std::string token = random_token();
  // The seed goes in the environment: other processes can read a command line.
  ChildRequest request{argv, {{"LABKIT_RUN_SEED", std::to_string(options.seed)}}, {"LABKIT_SECRET"},
                       (lab_work / log_name).string(), {}, true, token};
  if (on_record)
    request.on_result_line = [&on_record, &token](const std::string& line) {
      const json record = json::parse(line, nullptr, false);
      if (!record.is_discarded() && record.value("token", "") == token) on_record(record);
    };
  if (gpu >= 0) request.environment["CUDA_VISIBLE_DEVICES"] = std::to_string(gpu);
  if (!options.gpu_lock_dir.empty()) request.environment["LABKIT_GPU_LOCK"] = gpu_locks(options, gpu);
  // Each of `modules:` sits beside the module: module-mpi.so, lab-NN-name-solution-mpi.so.
  for (const ExtraModule& extra : lab.modules) {
    std::string variable = "LABKIT_MODULE_" + extra.name;
    std::transform(variable.begin(), variable.end(), variable.begin(), ::toupper);
    request.environment[variable] = (module.parent_path() / (module.stem().string() + "-" + extra.name + ".so")).string();
  }
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
      cr.message = "no result: " + (run_problem.empty() ? "the checks never reached this case" : run_problem);
    } else if (count > 1) {
      cr.ran = true;
      cr.message = "reported " + std::to_string(count) + " times: results not trusted";
    } else {
      cr.ran = true;
      cr.passed = found->second[0].value("passed", false);
      cr.message = found->second[0].value("message", "");
    }
    cr.points = cr.passed ? share : 0;
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
      cr.message = found == reports.performance.end()
                       ? "no result: " + (run_problem.empty() ? "not measured" : run_problem)
                       : "reported more than once: results not trusted";
      result.cases.push_back(cr);
      continue;
    }
    const json& record = found->second[0];
    if (record.contains("skipped")) {
      cr.message = record.value("skipped", "");
      result.cases.push_back(cr);
      continue;
    }
    cr.ran = true;
    cr.timing = record;
    cr.passed = record.value("output_ok", false) && record.contains("ratio");
    if (!cr.passed) {
      cr.message = "output wrong after timing, so no speed credit: " + record.value("message", "");
    } else {
      const double noise = labkit::ratio_noise(record["student"].value("relative_error", 0.0),
                                               record["reference"].value("relative_error", 0.0));
      cr.points = labkit::ratio_points(record["ratio"].get<double>(), rubric.zero_credit_ratio,
                                       rubric.full_credit_ratio, rubric.points, noise);
      if (faster_than_memory(record)) {
        cr.points = 0;
        cr.passed = false;
        cr.message = "faster than this GPU's memory can deliver the bytes the task must read: not credited "
                     "(is work skipped, or an earlier answer reused?)";
      } else if (faster_than_compute(record)) {
        cr.points = 0;
        cr.passed = false;
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
  auto rerun = [&](const std::string& name, std::map<std::string, std::vector<json>>& records) {
    if (records.count(name)) return;
    RunOutcome alone = run_checks(context, {"--subcase=" + name}, "rerun-" + name + ".log", per_case_seconds);
    merge(reports, alone.reports);
    if (!records.count(name))
      records[name].push_back({{"passed", false}, {"output_ok", false},
                               {"message", "run on its own, the process " + alone.child.describe() +
                                               " before this case reported"}});
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
  return [&live, &lab, correctness_cases, seen](const json& record) {
    if (record.value("type", "") != "progress") return;
    const std::string name = record.value("case", ""), stage = record.value("stage", "");
    if (record.value("kind", "") == "correctness") {
      seen->insert(name);
      live.show(lab_label(lab) + ": case " + std::to_string(seen->size()) + " of " +
                std::to_string(correctness_cases) + " (" + name + ")");
    } else {
      live.show(lab_label(lab) + ": " + stage + " case " + name);
    }
  };
}

constexpr std::size_t max_sanitized_cases = 3;

// A case that hung would hang again, and for far longer under a tool: it is left out.
bool worth_sanitizing(const CaseResult& c) {
  return c.kind == "correctness" && c.ran && !c.passed && c.message.find("did not return within") == std::string::npos &&
         c.message.rfind("not run", 0) != 0;
}

std::vector<std::string> cases_to_sanitize(const LabResult& result, SanitizeWhen when) {
  std::vector<std::string> cases;
  for (const CaseResult& c : result.cases)
    if (worth_sanitizing(c) && cases.size() < max_sanitized_cases) cases.push_back(c.name);
  if (cases.empty() && when == SanitizeWhen::always)
    for (const CaseResult& c : result.cases)
      if (c.kind == "correctness" && c.ran && cases.size() < max_sanitized_cases) cases.push_back(c.name);
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
  std::vector<std::string> filters = {"--subcase=" + joined(cases, ","),
                                      "--tool-slowdown=" + std::to_string(int(sanitize::slowdown(tool)))};
  for (const std::string& argument : sanitize::command(sanitizer, tool, (logs / (tool + "-{start}.log")).string()))
    filters.push_back("--host-wrapper=" + argument);
  const int wall_seconds = time_limit(checking.lab, checking.options);
  const RunOutcome outcome = run_checks(checking, filters, "sanitize-" + tool + ".log", wall_seconds);
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
  std::vector<std::string> filters = {"--subcase=" + case_name, "--profile", "--time-failed", "--tool-slowdown=50"};
  for (const std::string& argument : profile::command(ncu, (logs / (side + "-{start}.log")).string(), core_only))
    filters.push_back("--host-wrapper=" + argument);
  constexpr int wall_seconds = 600;
  const RunOutcome run = run_checks(context, filters, "profile-" + side + ".log", wall_seconds);
  const std::string output = read_tool_logs(logs, side) + "\n" + run.child.output_tail;
  if (!core_only && profile::rejected_a_metric(output)) return profile_side(context, ncu, case_name, side, true);
  ProfiledSide result;
  if (run.reports.skipped) result.problem = "not run: " + run.reports.skip_reason;
  if (result.problem.empty()) result.problem = profile::problem(output);
  if (!result.problem.empty()) return result;
  result.kernels = profile::parse_csv(output);
  const json profiled = [&] {
    for (const std::string& line : run.child.result_lines)
      if (const json r = json::parse(line, nullptr, false); !r.is_discarded() && r.value("type", "") == "profiled")
        return r;
    return json();
  }();
  if (profiled.is_null())
    result.case_problem = "the case did not run (the checks " + run.child.describe() + "):\n" + run.child.output_tail;
  else if (!profiled.value("output_ok", false))
    result.output_wrong = true, result.case_problem = profiled.value("message", "");
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
  RunOutcome run = run_checks(context, {}, "run.log", time_limit(lab, options),
                              case_progress(live, lab, dataset.correctness.size()));
  result.run_log = run.child.output_tail;
  result.device = run.reports.device;
  std::string problem;
  if (run.reports.skipped || run.child.exit_code == labkit::skip_exit_code) {
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
    const std::string what = run.child.exit_code == labkit::context_lost_exit_code
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
  constexpr int exit_failed = 1, exit_not_run = 3;
  const LabSpec& lab = *job.lab;
  const std::string chosen = chosen_case(lab, case_name);
  const std::string ncu = sanitize::find_tool("ncu", toolchain.nvcc);
  if (ncu.empty()) {
    std::cerr << "grade profile: Nsight Compute's `ncu` is not on PATH (nor beside nvcc): install Nsight Compute "
                 "(it comes with the CUDA toolkit) or add its folder to PATH\n";
    return exit_not_run;
  }
  LabResult built;
  if (!build_lab(job, toolchain, built)) {
    std::cerr << "grade profile: " << built.note << "\n" << built.build_log << "\n";
    return exit_failed;
  }
  GradeOptions untimed = options;
  untimed.calibration_dir.clear();
  const fs::path reference = fs::path(toolchain.build_root) / "labs" / ("lab-" + lab.dir + "-solution.so");
  const fs::path work(job.work_dir);
  std::cerr << "grade profile: lab " << lab.id << ", case " << chosen << ", under " << ncu << " (a minute or two)...\n";
  const ProfiledSide yours =
      profile_side({lab, toolchain, untimed, work, -1, work / "module.so", "performance"}, ncu, chosen, "yours", false);
  if (!yours.problem.empty()) {
    std::cerr << "grade profile: " << yours.problem << "\n";
    return exit_not_run;
  }
  const ProfiledSide theirs =
      profile_side({lab, toolchain, untimed, work, -1, reference, "performance"}, ncu, chosen, "reference", false);
  if (!theirs.problem.empty()) {
    std::cerr << "grade profile: " << theirs.problem << "\n";
    return exit_not_run;
  }
  if (!yours.case_problem.empty())
    std::cout << (yours.output_wrong ? "Note: your output was wrong in this call: " : "Note: ") << yours.case_problem
              << "\n\n";
  std::cout << profile::side_by_side(yours.kernels, theirs.kernels,
                                     "Lab " + lab.id + " " + lab.name + ", case " + chosen +
                                         ": one call each under Nsight Compute");
  return yours.kernels.empty() || !yours.case_problem.empty() ? exit_failed : 0;
}

LabResult grade_lab(const LabJob& job, const Toolchain& toolchain, const GradeOptions& options) {
  LabResult result;
  if (build_lab(job, toolchain, result)) run_lab(job, toolchain, options, -1, result);
  return result;
}

std::vector<json> calibrate_lab(const LabSpec& lab, const Toolchain& toolchain, const GradeOptions& options) {
  const fs::path work = fs::path(toolchain.build_root) / "grade" / "calibrate" / lab.dir;
  fs::create_directories(work);
  const fs::path reference = fs::path(toolchain.build_root) / "labs" / ("lab-" + lab.dir + "-solution.so");
  const RunContext context{lab, toolchain, options, work, -1, reference, "performance"};
  RunOutcome run = run_checks(context, {"--calibrate"}, "calibrate.log", time_limit(lab, options));
  if (run.reports.skipped) throw std::runtime_error("not run: " + run.reports.skip_reason);
  std::vector<json> records;
  for (const auto& [name, found] : run.reports.performance) records.insert(records.end(), found.begin(), found.end());
  if (records.empty()) throw std::runtime_error("the runner measured nothing: " + run.child.output_tail);
  return records;
}

int export_case(const LabSpec& lab, const std::string& case_name, const Toolchain& toolchain,
                std::uint64_t seed, const std::string& out_dir) {
  const labkit::Dataset dataset = labkit::load_dataset(lab.dataset);
  bool known = false;
  for (const labkit::Case& c : dataset.correctness) known = known || c.name == case_name;
  if (!known) throw std::invalid_argument("lab " + lab.id + " has no correctness case '" + case_name + "'");
  const fs::path build_labs = fs::path(toolchain.build_root) / "labs";
  const std::string reference = (build_labs / ("lab-" + lab.dir + "-solution.so")).string();
  const std::vector<std::string> argv = {(build_labs / ("lab-" + lab.dir + "-runner")).string(),
                                         "--student", reference, "--reference", reference,
                                         "--dataset", lab.dataset, "--seed", std::to_string(seed),
                                         "--export", out_dir, "--test-suite=correctness",
                                         "--subcase=" + case_name, "--no-intro=true"};
  fs::create_directories(out_dir);
  const ChildRequest request{argv, {}, {"LABKIT_SECRET"}, (fs::path(out_dir) / "export.log").string()};
  const ChildOutcome outcome = run_child(request, runner_limits(lab.time_limit_seconds));
  if (outcome.exit_code != 0) {
    std::cerr << outcome.output_tail << "\n";
    return outcome.exit_code == labkit::skip_exit_code ? 3 : 4;
  }
  std::cout << "wrote " << (fs::path(out_dir) / case_name).string() << "/*.npy (open with numpy.load)\n";
  return 0;
}

}  // namespace grade
