// The grader's steps put together for one lab: compile (compile.h), run the checks
// (runner_client.h), score (score.h), and compute-sanitizer on failing cases (sanitize_lab.h);
// and the runner's other uses, calibration and export.
#include "grader.h"

#include "bad_input.h"
#include "compile.h"
#include "labkit/dataset.h"
#include "labkit/protocol.h"
#include "labkit_build_config.h"
#include "progress.h"
#include "runner_client.h"
#include "sanitize_lab.h"
#include "score.h"

#include <filesystem>
#include <iostream>
#include <sstream>
#include <variant>

namespace fs = std::filesystem;
using nlohmann::json;

namespace grade {

namespace protocol = labkit::protocol;
namespace exit_status = labkit::protocol::exit_status;

Toolchain configured_toolchain() {
  return {LABKIT_SOURCE_ROOT, LABKIT_BUILD_ROOT, LABKIT_NVCC, {LABKIT_CUDA_FLAGS}};
}

LabResult not_graded(const LabSpec& lab, LabStatus status, const std::string& note) {
  LabResult result{lab.id, lab.name, lab.title};
  result.status = status;
  result.note = note;
  score_unrun(lab, result);
  return result;
}

void run_lab(const LabJob& job, const Toolchain& toolchain, const GradeOptions& options, int gpu,
             LabResult& result, const std::function<void()>& on_waiting_to_time) {
  const LabSpec& lab = *job.lab;
  const labkit::Dataset dataset = labkit::load_dataset(lab.dataset);
  const RunContext context{lab, toolchain, options, job.work_dir, gpu, fs::path(job.work_dir) / "module.so",
                           options.performance ? "correctness,performance" : "correctness"};
  LiveLine live(options.live_progress);
  live.show(lab_label(lab) + ": starting the checks");
  const RecordHandler show_case = case_progress(live, lab, dataset.correctness.size());
  RunOutcome run = run_checks(context, runner_arguments(context), "run.log", time_limit(lab, options),
                              [&](const protocol::Record& record) {
                                show_case(record);
                                const auto* clock = std::get_if<protocol::ClockRecord>(&record);
                                if (clock && clock->to_time && on_waiting_to_time) on_waiting_to_time();
                              });
  result.run_log = run.child.output_tail;
  result.device = run.reports.device;
  std::string problem;
  if (run.reports.skipped || run.child.exit_code == exit_status::skipped) {
    result.status = LabStatus::not_run;
    result.note = "not run: " + (run.reports.skip_reason.empty() ? "no CUDA GPU found here" : run.reports.skip_reason);
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
    if (const auto cases = cases_to_sanitize(result, dataset, options.sanitize); !cases.empty())
      result.sanitizer = sanitize_lab(context, cases, live);
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

// The runner's "wrote PATH" lines, without its doctest summary.
static void print_lines_starting(const std::string& text, const std::string& prefix) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind(prefix, 0) == 0) std::cout << line << "\n";
}

int export_case(const LabSpec& lab, const std::string& case_name, const Toolchain& toolchain,
                std::uint64_t seed, const std::string& out_dir) {
  const labkit::Dataset dataset = labkit::load_dataset(lab.dataset);
  bool known = false;
  for (const labkit::Case& c : dataset.correctness) known = known || c.name == case_name;
  if (!known) throw BadInput("lab " + lab.id + " has no correctness case '" + case_name + "'");
  protocol::RunnerArguments arguments;
  arguments.student = arguments.reference = solution_module(lab, toolchain).string();
  arguments.dataset = lab.dataset;
  arguments.seed = seed;
  arguments.export_dir = out_dir;
  // A machine the lab cannot run on gets what the checks draw on the CPU (the runner's rule).
  arguments.min_compute_capability = lab.min_compute_capability;
  arguments.min_gpus = lab.min_gpus;
  arguments.test_suite = "correctness";
  arguments.subcases = {case_name};
  arguments.doctest = {"--no-intro=true"};
  std::vector<std::string> argv = {runner_program(lab, toolchain).string()};
  for (const std::string& argument : arguments.to_argv()) argv.push_back(argument);
  fs::create_directories(out_dir);
  const ChildRequest request{argv, {}, {protocol::env::secret}, (fs::path(out_dir) / "export.log").string()};
  const ChildOutcome outcome = run_child(request, runner_limits(lab.time_limit_seconds));
  switch (outcome.exit_code) {
    case exit_status::ok:
      std::cout << "wrote " << (fs::path(out_dir) / case_name).string() << "/*.npy (open with numpy.load)\n";
      return exit_status::ok;
    case exit_status::not_run:  // no GPU here: what the checks draw on the CPU
      print_lines_starting(outcome.output_tail, "wrote ");
      std::cout << "(lab " << lab.id << " cannot run here (no CUDA GPU, or too few): only the arrays its checks "
                << "compute on the CPU; where it runs, the same command writes them all; open them with numpy.load)\n";
      return exit_status::not_run;
    default:
      std::cerr << outcome.output_tail << "\n";
      return outcome.exit_code == exit_status::skipped ? exit_status::not_run : exit_status::kit_fault;
  }
}

}  // namespace grade
