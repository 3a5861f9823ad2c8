// `grade profile`: the lab's main performance case once for the submission and once for the
// reference, each with the host under Nsight Compute, side by side.
#include "bad_input.h"
#include "grader.h"

#include "labkit/protocol.h"
#include "profile.h"
#include "runner_client.h"
#include "sanitize.h"

#include <iostream>

namespace fs = std::filesystem;

namespace grade {

namespace protocol = labkit::protocol;
namespace exit_status = labkit::protocol::exit_status;

namespace {

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
  if (lab.performance.empty()) throw BadInput("lab " + lab.id + " has no performance case to profile");
  if (case_name.empty()) return lab.performance.front().case_name;
  for (const PerformanceRubric& p : lab.performance)
    if (p.case_name == case_name) return case_name;
  std::string known;
  for (const PerformanceRubric& p : lab.performance) known += " " + p.case_name;
  throw BadInput("lab " + lab.id + " has no performance case '" + case_name + "'; it has:" + known);
}

}  // namespace

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

}  // namespace grade
