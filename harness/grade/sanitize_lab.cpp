#include "sanitize_lab.h"

#include "sanitize.h"
#include "text.h"

#include <cstdio>
#include <set>

namespace fs = std::filesystem;

namespace grade {

namespace protocol = labkit::protocol;

namespace {

constexpr std::size_t max_sanitized_cases = 3;

// A case that hung would hang again, and for far longer under a tool: it is left out, as is
// one that could not run.
bool worth_sanitizing(const CaseResult& c) { return c.kind == "correctness" && c.outcome == Outcome::failed; }

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

}  // namespace

std::vector<std::string> cases_to_sanitize(const LabResult& result, const labkit::Dataset& dataset, SanitizeWhen when) {
  std::set<std::string> in_ranks;
  for (const labkit::Case& c : dataset.correctness)
    if (labkit::runs_in_mpi_ranks(c)) in_ranks.insert(c.name);
  auto pick = [&](auto wanted) {
    std::vector<std::string> cases;
    for (const CaseResult& c : result.cases)
      if (wanted(c) && !in_ranks.count(c.name) && cases.size() < max_sanitized_cases) cases.push_back(c.name);
    return cases;
  };
  std::vector<std::string> cases = pick(worth_sanitizing);
  if (cases.empty() && when == SanitizeWhen::always)
    cases = pick([](const CaseResult& c) { return c.kind == "correctness" && c.ran(); });
  return cases;
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

}  // namespace grade
