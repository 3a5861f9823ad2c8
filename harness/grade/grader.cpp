#include "grader.h"

#include "intake.h"
#include "labkit/dataset.h"
#include "labkit/device.h"
#include "labkit/fingerprint.h"
#include "labkit/stats.h"
#include "labkit_build_config.h"
#include "process.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <iostream>
#include <map>

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

// Stages only the declared student files (so a submission's own copy of the contract header
// is never used) and compiles them into the module the runner loads.
bool build_module(const LabSpec& lab, const std::string& student_dir, const Toolchain& tc,
                  const fs::path& lab_work, std::string& log) {
  const fs::path staged = lab_work / "src";
  fs::remove_all(staged);
  fs::create_directories(staged);
  std::vector<std::string> argv = {tc.nvcc, "-shared", "-Xcompiler", "-fPIC", "-O3"};
  argv.insert(argv.end(), tc.cuda_flags.begin(), tc.cuda_flags.end());
  argv.insert(argv.end(), lab.nvcc_flags.begin(), lab.nvcc_flags.end());  // lab.yaml `build:`
  argv.push_back("-I" + (fs::path(tc.source_root) / "labs" / lab.dir).string());
  for (const std::string& file : lab.student_files) {
    fs::copy_file(fs::path(student_dir) / file, staged / file, fs::copy_options::overwrite_existing);
    argv.push_back((staged / file).string());
  }
  for (const std::string& library : lab.link_libraries) argv.push_back("-l" + library);
  argv.insert(argv.end(), {"-o", (lab_work / "module.so").string()});

  ChildRequest request{argv, {}, {"LABKIT_SECRET"}, (lab_work / "build.log").string(), {}, false, {}};
  const ChildOutcome outcome = run_child(request, {build_time_limit_seconds, 2 * build_time_limit_seconds});
  log = tail(outcome.output_tail, build_log_shown_bytes);
  // Name the student's own files in the diagnostics, not the staged copies.
  const std::string staged_prefix = staged.string() + "/";
  for (std::size_t at; (at = log.find(staged_prefix)) != std::string::npos;)
    log.replace(at, staged_prefix.size(), (fs::path(student_dir) / "").string());
  if (outcome.timed_out) log = "the compiler " + outcome.describe() + "\n" + log;
  return outcome.exit_code == 0 && !outcome.timed_out;
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
  };
  return signs;
}

// The first forbidden library the lab's rubric names that the submission uses, with where it
// was seen; empty when none.
std::string forbidden_use(const LabSpec& lab, const fs::path& lab_work) {
  auto forbidden = [&](const LibrarySigns& library) {
    return std::find(lab.forbidden.begin(), lab.forbidden.end(), library.name) != lab.forbidden.end();
  };
  // Includes first: they name the library the student chose (Thrust's code contains CUB's).
  for (const LibrarySigns& library : library_signs())
    for (const std::string& file : lab.student_files)
      if (forbidden(library) && std::regex_search(labkit::file_bytes((lab_work / "src" / file).string()), library.include))
        return std::string(library.name) + ", included in " + file;
  const std::string module = labkit::file_bytes((lab_work / "module.so").string());
  for (const LibrarySigns& library : library_signs())
    for (const std::string& sign : library.in_module)
      if (forbidden(library) && module.find(sign) != std::string::npos)
        return std::string(library.name) + ", seen in the compiled code (" + sign + ")";
  return {};
}

// The shared libraries of the rubric's forbidden ones, as the host's memory map names them:
// the runner stops any call after which one of them is mapped.
std::string forbidden_library_files(const LabSpec& lab) {
  static const std::map<std::string, std::string> files = {{"cublas", "libcublas"}, {"cublasLt", "libcublasLt"}};
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
                      const std::string& log_name, int wall_seconds) {
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
  if (gpu >= 0) request.environment["CUDA_VISIBLE_DEVICES"] = std::to_string(gpu);
  if (!options.gpu_lock_dir.empty()) request.environment["LABKIT_GPU_LOCK"] = gpu_locks(options, gpu);
  RunOutcome run;
  run.child = run_child(request, {wall_seconds, 2 * wall_seconds});
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
      }
      if (!record["student"].value("confirmed", true))
        cr.message = unconfirmed_message(record["student"]);
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
  } else if (!build_module(lab, job.student_dir, toolchain, job.work_dir, result.build_log)) {
    result.status = LabStatus::build_failed;
    result.note = "your files did not compile; the compiler's messages are below";
  } else if (const std::string found = forbidden_use(lab, job.work_dir); !found.empty()) {
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
  RunOutcome run = run_checks(context, {}, "run.log", time_limit(lab, options));
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
  const ChildOutcome outcome = run_child(request, {lab.time_limit_seconds, 2 * lab.time_limit_seconds});
  if (outcome.exit_code != 0) {
    std::cerr << outcome.output_tail << "\n";
    return outcome.exit_code == labkit::skip_exit_code ? 3 : 4;
  }
  std::cout << "wrote " << (fs::path(out_dir) / case_name).string() << "/*.npy (open with numpy.load)\n";
  return 0;
}

}  // namespace grade
