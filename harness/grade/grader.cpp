#include "grader.h"

#include "labkit/dataset.h"
#include "labkit/stats.h"
#include "labkit_build_config.h"
#include "process.h"

#include <filesystem>
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
    if (type == "performance") r.performance[record.value("case", "")].push_back(record);
    if (type == "done") r.done = true;
    if (type == "device") r.device = record;
    if (type == "skipped") r.skipped = true, r.skip_reason = record.value("reason", "");
    if (type == "fault") r.fault = record.value("message", "");
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
  argv.push_back("-I" + (fs::path(tc.source_root) / "labs" / lab.dir).string());
  for (const std::string& file : lab.student_files) {
    fs::copy_file(fs::path(student_dir) / file, staged / file, fs::copy_options::overwrite_existing);
    argv.push_back((staged / file).string());
  }
  argv.insert(argv.end(), {"-o", (lab_work / "module.so").string()});

  ChildRequest request{argv, {}, {"LABKIT_SECRET"}, (lab_work / "build.log").string(), {}, false, {}};
  const ChildOutcome outcome = run_child(request, {build_time_limit_seconds, 2 * build_time_limit_seconds});
  log = tail(outcome.output_tail, build_log_shown_bytes);
  if (outcome.timed_out) log = "the compiler " + outcome.describe() + "\n" + log;
  return outcome.exit_code == 0 && !outcome.timed_out;
}

struct RunOutcome {
  ChildOutcome child;
  Reports reports;
};

RunOutcome run_checks(const LabSpec& lab, const Toolchain& tc, const GradeOptions& options,
                      const fs::path& lab_work, const std::vector<std::string>& filters,
                      const std::string& log_name, int wall_seconds) {
  const fs::path build_labs = fs::path(tc.build_root) / "labs";
  std::vector<std::string> argv = {
      (build_labs / ("lab-" + lab.dir + "-runner")).string(),
      "--student", (lab_work / "module.so").string(),
      "--reference", (build_labs / ("lab-" + lab.dir + "-solution.so")).string(),
      "--dataset", lab.dataset,
      "--seed", std::to_string(options.seed),
      options.performance ? "--test-suite=correctness,performance" : "--test-suite=correctness",
      "--no-intro=true"};
  argv.insert(argv.end(), filters.begin(), filters.end());
  const std::string token = random_token();
  ChildRequest request{argv, {}, {"LABKIT_SECRET"}, (lab_work / log_name).string(), {}, true, token};
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
      if (record["student"].value("off_stream_work", false))
        cr.message = "work ran outside the stream passed in; timed by the wall clock instead";
    }
    result.cases.push_back(cr);
  }
}

// After a crash or hang, each case that had not reported runs again in a process of its own,
// so one bad case does not zero the rest of the lab. A case that still says nothing is
// recorded as failed with what happened to its process.
void rerun_missing(const LabSpec& lab, const Toolchain& tc, const GradeOptions& options,
                   const fs::path& lab_work, const labkit::Dataset& dataset, Reports& reports) {
  const int per_case_seconds = std::max(60, lab.time_limit_seconds / 4);
  auto rerun = [&](const std::string& name, std::map<std::string, std::vector<json>>& records) {
    if (records.count(name)) return;
    RunOutcome alone = run_checks(lab, tc, options, lab_work, {"--subcase=" + name},
                                  "rerun-" + name + ".log", per_case_seconds);
    merge(reports, alone.reports);
    if (!records.count(name))
      records[name].push_back({{"passed", false}, {"output_ok", false},
                               {"message", "run on its own, the process " + alone.child.describe() +
                                               " before this case reported"}});
  };
  for (const labkit::Case& c : dataset.correctness) rerun(c.name, reports.correctness);
  if (options.performance)
    for (const PerformanceRubric& p : lab.performance) rerun(p.case_name, reports.performance);
}

}  // namespace

Toolchain configured_toolchain() {
  return {LABKIT_SOURCE_ROOT, LABKIT_BUILD_ROOT, LABKIT_NVCC, {LABKIT_CUDA_FLAGS}};
}

std::string find_student_dir(const LabSpec& lab, const std::string& base) {
  for (const fs::path& dir : {fs::path(base) / "labs" / lab.dir, fs::path(base) / lab.dir, fs::path(base)}) {
    bool all = true;
    for (const std::string& file : lab.student_files) all = all && fs::is_regular_file(dir / file);
    if (all) return dir.string();
  }
  return {};
}

LabResult grade_lab(const LabSpec& lab, const std::string& student_dir, const Toolchain& toolchain,
                    const GradeOptions& options) {
  LabResult result{lab.id, lab.name, lab.title};
  const labkit::Dataset dataset = labkit::load_dataset(lab.dataset);
  const fs::path lab_work = fs::path(options.work_dir) / lab.dir;
  fs::create_directories(lab_work);

  if (student_dir.empty()) {
    result.status = LabStatus::missing_files;
    result.note = "student files not found (expected: " + lab.student_files.front() + " ...): lab not graded";
  } else if (!build_module(lab, student_dir, toolchain, lab_work, result.build_log)) {
    result.status = LabStatus::build_failed;
    result.note = "your files did not compile; the compiler's messages are below";
  }
  if (result.status != LabStatus::graded) {
    score_correctness(lab, dataset, {}, result.note, result);
    score_performance(lab, {}, result.note, result);
    add_totals(result);
    return result;
  }

  RunOutcome run = run_checks(lab, toolchain, options, lab_work, {}, "run.log", lab.time_limit_seconds);
  result.run_log = run.child.output_tail;
  result.device = run.reports.device;
  std::string problem;
  if (run.reports.skipped || run.child.exit_code == 77) {
    result.status = LabStatus::not_run;
    result.note = "not run: " + (run.reports.skip_reason.empty() ? "no CUDA device" : run.reports.skip_reason);
    problem = result.note;
  } else if (!run.reports.fault.empty()) {
    result.status = LabStatus::kit_fault;
    result.note = "the lab's checks could not start: " + run.reports.fault;
    problem = result.note;
  } else if (!run.reports.done || run.child.timed_out || run.child.signal != 0) {
    result.status = LabStatus::run_failed;
    result.note = "the checks stopped early: the process " + run.child.describe() +
                  "; cases that had not reported were run again one at a time";
    problem = "the process " + run.child.describe() + " before this case reported";
    rerun_missing(lab, toolchain, options, lab_work, dataset, run.reports);
  }
  score_correctness(lab, dataset, run.reports, problem, result);
  score_performance(lab, run.reports, problem, result);
  add_totals(result);
  return result;
}

}  // namespace grade
