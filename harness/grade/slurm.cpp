#include "slurm.h"

#include "bad_input.h"
#include "grader.h"
#include "labkit/fingerprint.h"
#include "labkit/protocol.h"
#include "process.h"

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace fs = std::filesystem;
using nlohmann::json;

namespace grade::slurm {

namespace {

// What a submitted run left for its task: the result of its build (compiler warnings included),
// with the same fingerprint as the saved result it will become.
std::string built_file(const std::string& work_dir) { return work_dir + "/built.json"; }

int effective_time_limit(const LabSpec& lab, const GradeOptions& options) {
  return options.time_limit_seconds > 0 ? options.time_limit_seconds : lab.time_limit_seconds;
}

// A run's worst case: the checks' wall limit, the hard kill at twice that, and the cases run
// again one at a time after a crash.
int worst_case_seconds(const PendingRun& run) { return 2 * run.time_limit_seconds + 120; }

void write_private_file(const fs::path& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) throw std::runtime_error("cannot write " + path.string());
  fchmod(fd, 0600);  // an older file may have had other bits
  const bool written = ::write(fd, text.data(), text.size()) == ssize_t(text.size());
  ::close(fd);
  if (!written) throw std::runtime_error("cannot write " + path.string());
}

void write_text(const fs::path& path, const std::string& text, fs::perms perms) {
  std::ofstream(path) << text;
  fs::permissions(path, perms);
}

// Runs a Slurm command through the kit's child-process helper (the secret is removed from its
// environment, so sbatch's default --export=ALL cannot carry it into a job) and returns what it
// printed; throws with that output when it fails.
std::string slurm_command(const std::vector<std::string>& argv, const fs::path& log) {
  const ChildRequest request{argv, {}, {labkit::protocol::env::secret}, log.string(), {}, false, {}};
  const ChildOutcome outcome = run_child(request, {120, 120});
  if (outcome.exit_code != 0 || outcome.timed_out)
    throw std::runtime_error(argv[0] + " " + outcome.describe() + ": " + outcome.output_tail);
  return outcome.output_tail;
}

// sbatch --parsable prints "ID" or "ID;cluster", after any warnings.
std::string submitted_job_id(const std::string& output) {
  std::istringstream lines(output);
  std::string id;
  for (std::string line; std::getline(lines, line);)
    if (!line.empty() && std::isdigit(static_cast<unsigned char>(line[0]))) id = line.substr(0, line.find(';'));
  if (id.empty()) throw std::runtime_error("sbatch gave no job id: " + output);
  return id;
}

std::string user_name() {
  const passwd* entry = getpwuid(getuid());
  return entry ? entry->pw_name : std::to_string(getuid());
}

std::string join(const std::vector<std::string>& words) {
  std::string line;
  for (const std::string& word : words) line += " " + shell_quote(word);
  return line;
}

std::string sbatch_header(const std::string& job_name, const SlurmOptions& options, const std::string& log_pattern,
                          int minutes) {
  std::string header = "#SBATCH --job-name=" + job_name + "\n";
  if (!options.partition.empty()) header += "#SBATCH --partition=" + options.partition + "\n";
  header += "#SBATCH --ntasks=1\n";
  header += "#SBATCH --time=" + std::to_string(std::max(1, minutes)) + "\n";
  header += "#SBATCH --output=" + log_pattern + "\n";
  for (const std::string& option : options.sbatch_options) header += "#SBATCH " + option + "\n";
  return header;
}

// Per-task scratch on the node's local disk ($TMPDIR or /tmp), removed when the task ends. The
// sandboxed hosts make their own scratch under /tmp, which is local too.
constexpr const char* scratch_lines =
    "set -u\n"
    "scratch=\"$(mktemp -d \"${TMPDIR:-/tmp}/labkit-${SLURM_JOB_ID:-job}-XXXXXX\")\"\n"
    "trap 'rm -rf \"$scratch\"' EXIT\n"
    "export TMPDIR=\"$scratch\"\n";

}  // namespace

std::vector<ArrayPlan> plan_arrays(const std::vector<PendingRun>& pending, int shard_size) {
  shard_size = std::max(1, shard_size);
  std::map<int, std::vector<PendingRun>> by_gpus;
  for (const PendingRun& run : pending) by_gpus[std::max(1, run.gpus)].push_back(run);
  std::vector<ArrayPlan> arrays;
  for (auto& [gpus, runs] : by_gpus) {
    ArrayPlan array{"gpus-" + std::to_string(gpus), gpus};
    int longest_seconds = 0;
    for (std::size_t first = 0; first < runs.size(); first += std::size_t(shard_size)) {
      const std::size_t last = std::min(runs.size(), first + std::size_t(shard_size));
      array.shards.emplace_back(runs.begin() + std::ptrdiff_t(first), runs.begin() + std::ptrdiff_t(last));
      int seconds = 60;  // the task's own start and the saving of results
      for (const PendingRun& run : array.shards.back()) seconds += worst_case_seconds(run);
      longest_seconds = std::max(longest_seconds, seconds);
    }
    array.time_limit_minutes = (longest_seconds + 59) / 60;
    arrays.push_back(std::move(array));
  }
  return arrays;
}

std::string gres_for(const std::string& gres, int gpus) {
  if (gres.empty() || gres == "none") return {};
  const std::size_t colon = gres.rfind(':');
  const bool counted = colon != std::string::npos && colon + 1 < gres.size() &&
                       std::all_of(gres.begin() + std::ptrdiff_t(colon + 1), gres.end(), ::isdigit);
  return (counted ? gres.substr(0, colon) : gres) + ":" + std::to_string(std::max(1, gpus));
}

std::string shell_quote(const std::string& word) {
  if (!word.empty() && word.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:,+@%") ==
                           std::string::npos)
    return word;
  std::string quoted = "'";
  for (char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

std::string array_script(const ArrayPlan& array, const SlurmOptions& options, const ScriptContext& context) {
  const fs::path slurm_dir(context.slurm_dir);
  std::string script = "#!/bin/bash\n";
  script += "# Written by `grade all --submissions --slurm`: each task runs one shard of the compiled\n"
            "# lab-submissions that need " + std::to_string(array.gpus) + " GPU(s) (plan.json, array " +
            array.name + "). Nothing is compiled here.\n"
            "# Submitting it again re-runs only what has no saved result.\n";
  script += sbatch_header(context.job_name, options, (slurm_dir / "logs" / (array.name + "-%A_%a.log")).string(),
                          array.time_limit_minutes);
  std::string range = "0-" + std::to_string(array.shards.size() - 1);
  if (options.array_limit > 0) range += "%" + std::to_string(options.array_limit);
  script += "#SBATCH --array=" + range + "\n";
  script += "#SBATCH --cpus-per-task=" + std::to_string(std::max(1, options.cpus_per_task)) + "\n";
  if (const std::string gres = gres_for(options.gres, array.gpus); !gres.empty()) script += "#SBATCH --gres=" + gres + "\n";
  script += scratch_lines;
  std::vector<std::string> command = {context.grade_binary, "slurm-task", (slurm_dir / "plan.json").string(),
                                      array.name};
  script += join(command).substr(1) + " \"$SLURM_ARRAY_TASK_ID\"" +
            join({"--submissions", context.submissions_dir, "--out", context.out_dir}) + join(context.grading_args) +
            "\n";
  return script;
}

std::string collect_script(const SlurmOptions& options, const ScriptContext& context) {
  const fs::path slurm_dir(context.slurm_dir);
  std::string script = "#!/bin/bash\n";
  script += "# Written by `grade all --submissions --slurm`: writes the gradebook, the students' reports,\n"
            "# Gradescope results and JUnit from the saved results, once the arrays are over (or by hand:\n"
            "# `bash` this file on the login node). Nothing is compiled or run.\n";
  script += sbatch_header(context.job_name, options, (slurm_dir / "logs" / "collect-%j.log").string(), 30);
  script += "#SBATCH --cpus-per-task=1\n";
  script += scratch_lines;
  std::vector<std::string> command = {context.grade_binary, "collect", context.submissions_dir};
  command.insert(command.end(), context.lab_keys.begin(), context.lab_keys.end());
  command.insert(command.end(), {"--out", context.out_dir});
  script += join(command).substr(1) + join(context.grading_args) + "\n";
  return script;
}

std::size_t submit(SubmitRequest request) {
  const BatchOptions& options = request.batch;
  ScriptContext& context = request.context;
  const fs::path slurm_dir = fs::path(context.out_dir) / "slurm";
  fs::create_directories(slurm_dir / "logs");
  // Only the instructor reads the plan, the secret and the tasks' logs.
  fs::permissions(slurm_dir, fs::perms::owner_all);
  fs::permissions(slurm_dir / "logs", fs::perms::owner_all);
  context.slurm_dir = slurm_dir.string();
  context.job_name = "labkit-grade-" + labkit::hex(labkit::hash_bytes(fs::weakly_canonical(context.out_dir).string())).substr(0, 8);

  // A second submit while the first one's jobs are queued would grade the same runs twice.
  const std::string active = slurm_command(
      {"squeue", "--noheader", "--user=" + user_name(), "--name=" + context.job_name, "--format=%i"},
      slurm_dir / "squeue.log");
  if (active.find_first_not_of(" \n") != std::string::npos)
    throw std::runtime_error("jobs of an earlier --slurm submit for " + context.out_dir +
                             " are still queued or running (" + context.job_name +
                             "): wait for them (squeue --name=" + context.job_name + ") or scancel them first");

  // The secret reaches the tasks as a file only its owner reads; the scripts name the file.
  const fs::path secret_file = slurm_dir / "secret";
  write_private_file(secret_file, request.secret + "\n");
  context.grading_args.insert(context.grading_args.end(), {"--secret-file", secret_file.string()});

  // Compile on this node what has no saved result; a build failure is a final result already.
  struct Slot {
    LabJob job;
    std::string fingerprint;
    bool pending = false;
  };
  std::vector<Slot> slots;
  for (const Submission& s : request.submissions)
    for (const LabSpec& lab : request.labs)
      if (s.problem.empty()) {
        const LabJob job = job_for(lab, s, options);
        slots.push_back({job, result_fingerprint(job, request.toolchain, options.grade)});
      }
  std::atomic<std::size_t> next{0}, finished{0}, compiled{0};
  std::mutex print;
  auto builder = [&] {
    for (std::size_t i; (i = next++) < slots.size();) {
      Slot& slot = slots[i];
      const std::string result_path = saved_result_file(slot.job.work_dir);
      LabResult result;
      std::string outcome;
      if (options.reuse_saved && load_saved_result(result_path, slot.fingerprint, result) && reusable(result)) {
        outcome = "saved result reused";
      } else if (options.reuse_saved && load_saved_result(built_file(slot.job.work_dir), slot.fingerprint, result) &&
                 fs::exists(fs::path(slot.job.work_dir) / "module.so")) {
        fs::remove(result_path);
        slot.pending = true;
        outcome = "compiled earlier, to run";
      } else {
        fs::remove(result_path);
        fs::remove(built_file(slot.job.work_dir));
        if (build_lab(slot.job, request.toolchain, result)) {
          save_result(built_file(slot.job.work_dir), slot.fingerprint, result);
          slot.pending = true;
          outcome = "compiled, to run";
          ++compiled;
        } else {
          save_result(result_path, slot.fingerprint, result);
          outcome = to_string(result.status) + " (final)";
        }
      }
      if (options.progress) {
        std::lock_guard lock(print);
        std::fprintf(stderr, "[%zu/%zu] %s/%s: %s\n", ++finished, slots.size(), slot.job.who.c_str(),
                     slot.job.lab->id.c_str(), outcome.c_str());
      }
    }
  };
  std::vector<std::thread> builders;
  for (int w = 0; w < std::max(1, options.build_workers); ++w) builders.emplace_back(builder);
  for (auto& t : builders) t.join();

  std::vector<PendingRun> pending;
  for (const Slot& slot : slots)
    if (slot.pending)
      pending.push_back({slot.job.who, slot.job.lab->dir, std::max(1, slot.job.lab->min_gpus),
                         effective_time_limit(*slot.job.lab, options.grade)});
  if (pending.empty()) {
    std::printf("slurm: every lab-submission has a saved result: nothing to submit\n");
    return 0;
  }

  const std::vector<ArrayPlan> arrays = plan_arrays(pending, request.slurm.shard_size);
  json plan = {{"submissions", context.submissions_dir}, {"out", context.out_dir}, {"arrays", json::array()}};
  for (const ArrayPlan& array : arrays) {
    json shards = json::array();
    for (const auto& shard : array.shards) {
      json runs = json::array();
      for (const PendingRun& run : shard) runs.push_back({{"who", run.who}, {"lab", run.lab_dir}});
      shards.push_back(runs);
    }
    plan["arrays"].push_back({{"name", array.name}, {"gpus", array.gpus}, {"shards", shards}});
  }
  write_text(slurm_dir / "plan.json", plan.dump(1), fs::perms::owner_read | fs::perms::owner_write);

  std::vector<std::string> job_ids;
  for (const ArrayPlan& array : arrays) {
    const fs::path script = slurm_dir / (array.name + ".sh");
    write_text(script, array_script(array, request.slurm, context), fs::perms::owner_all);
    const std::string id =
        submitted_job_id(slurm_command({"sbatch", "--parsable", script.string()}, slurm_dir / "sbatch.log"));
    job_ids.push_back(id);
    std::printf("slurm: job array %s: %zu task(s) of up to %d lab-submission(s), %d GPU(s) each (%s)\n", id.c_str(),
                array.shards.size(), std::max(1, request.slurm.shard_size), array.gpus, script.c_str());
  }
  const fs::path collect = slurm_dir / "collect.sh";
  write_text(collect, collect_script(request.slurm, context), fs::perms::owner_all);
  std::string dependency = "--dependency=afterany";
  for (const std::string& id : job_ids) dependency += ":" + id;
  const std::string collect_id = submitted_job_id(
      slurm_command({"sbatch", "--parsable", "--kill-on-invalid-dep=no", dependency, collect.string()},
                    slurm_dir / "sbatch.log"));
  job_ids.push_back(collect_id);
  std::ofstream(slurm_dir / "jobs.txt") << [&] {
    std::string ids;
    for (const std::string& id : job_ids) ids += id + "\n";
    return ids;
  }();
  std::printf("slurm: %zu lab-submission(s) submitted (%zu compiled now); collect job %s writes %s/gradebook.csv "
              "when the arrays end (logs: %s/logs; watch: squeue --name=%s)\n",
              pending.size(), std::size_t(compiled), collect_id.c_str(), context.out_dir.c_str(),
              slurm_dir.c_str(), context.job_name.c_str());
  return pending.size();
}

int run_task(const std::string& plan_file, const std::string& array_name, int task,
             const std::vector<Submission>& submissions, const std::vector<LabSpec>& catalog,
             const Toolchain& toolchain, const BatchOptions& options) {
  std::ifstream in(plan_file);
  const json plan = json::parse(in, nullptr, false);
  if (!in || plan.is_discarded()) throw std::runtime_error("cannot read the plan " + plan_file);
  const json* shard = nullptr;
  for (const json& array : plan.at("arrays"))
    if (array.value("name", "") == array_name && task >= 0 && std::size_t(task) < array.at("shards").size())
      shard = &array.at("shards").at(std::size_t(task));
  if (!shard) throw std::runtime_error("the plan has no task " + std::to_string(task) + " in array " + array_name);

  int status = 0;
  for (const json& entry : *shard) {
    const std::string who = entry.at("who"), lab_dir = entry.at("lab");
    const auto submission = std::find_if(submissions.begin(), submissions.end(),
                                         [&](const Submission& s) { return s.who == who; });
    const auto lab = std::find_if(catalog.begin(), catalog.end(), [&](const LabSpec& l) { return l.dir == lab_dir; });
    if (submission == submissions.end() || lab == catalog.end()) {
      std::printf("%s/%s: no such submission or lab any more: skipped\n", who.c_str(), lab_dir.c_str());
      status = 1;
      continue;
    }
    const LabJob job = job_for(*lab, *submission, options);
    const std::string fingerprint = result_fingerprint(job, toolchain, options.grade);
    LabResult result;
    if (load_saved_result(saved_result_file(job.work_dir), fingerprint, result) && reusable(result)) {
      std::printf("%s/%s: already graded, result kept\n", who.c_str(), lab->id.c_str());
      continue;
    }
    if (!load_saved_result(built_file(job.work_dir), fingerprint, result)) {
      std::printf("%s/%s: not compiled for these files and options (changed since the submit?): "
                  "run the --slurm submit again\n", who.c_str(), lab->id.c_str());
      status = 1;
      continue;
    }
    // The GPUs are those Slurm gave this task (CUDA_VISIBLE_DEVICES): the runtime picks.
    run_lab(job, toolchain, options.grade, -1, result);
    save_result(saved_result_file(job.work_dir), fingerprint, result);
    std::printf("%s/%s: %s, %s\n", who.c_str(), lab->id.c_str(), to_string(result.status).c_str(),
                points_line(result).c_str());
    std::fflush(stdout);
  }
  return status;
}

namespace {

constexpr const char* not_yet_note =
    "not graded yet: no saved result for these files (its Slurm task has not run, or failed: see the task logs; "
    "the same --slurm command submits it again)";
constexpr const char* other_inputs_note =
    "not graded for these inputs: its saved result was graded with another secret, --seed or options, or from "
    "files that have changed since";

}  // namespace

std::vector<Report> collect(const std::vector<Submission>& submissions, const std::vector<LabSpec>& labs,
                            const Toolchain& toolchain, const BatchOptions& options) {
  std::vector<Report> reports;
  std::size_t found = 0, for_other_inputs = 0;
  for (const Submission& s : submissions) {
    Report report{s.who, "student files"};
    for (const LabSpec& lab : labs) {
      if (!s.problem.empty()) {  // as grade_batch reports it
        report.labs.push_back(not_graded(lab, LabStatus::missing_files, s.problem + " (lab not graded)"));
        continue;
      }
      const LabJob job = job_for(lab, s, options);
      const std::string saved = saved_result_file(job.work_dir);
      LabResult result;
      if (load_saved_result(saved, result_fingerprint(job, toolchain, options.grade), result)) {
        ++found;
      } else {
        const bool other = result_saved(saved);
        for_other_inputs += other;
        result = not_graded(lab, LabStatus::not_run, other ? other_inputs_note : not_yet_note);
      }
      report.labs.push_back(result);
    }
    add_totals(report);
    reports.push_back(report);
  }
  // Nothing saved for these inputs, yet results are there: the secret or the options differ
  // from the batch's, and writing would replace a good gradebook with one of "not graded".
  if (found == 0 && for_other_inputs > 0)
    throw BadInput("none of the " + std::to_string(for_other_inputs) +
                   " saved results of this batch was graded with this secret, --seed and options: collect with the "
                   "batch's own (LABKIT_SECRET or --secret-file, and its --seed and --no-performance); nothing was "
                   "written");
  return reports;
}

}  // namespace grade::slurm
