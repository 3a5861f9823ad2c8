// labkit-grade: the `grade` command. The `./grade` launcher at the repository root builds
// this program (and the lab runners) with Meson, then runs it.
#include "bad_input.h"
#include "batch.h"
#include "board.h"
#include "build_targets.h"
#include "catalog.h"
#include "docs.h"
#include "expect.h"
#include "grader.h"
#include "model.h"
#include "report/console_text.h"
#include "report/report_writer.h"
#include "similarity.h"
#include "slurm.h"

#include "labkit/defences.h"
#include "labkit/generators.h"
#include "labkit/protocol.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <iostream>

namespace fs = std::filesystem;

namespace {

// Exit codes (labkit/protocol.h's table), as `grade --help` documents them.
namespace exit_status = labkit::protocol::exit_status;
constexpr int exit_all_passed = exit_status::ok;
constexpr int exit_some_failed = exit_status::failed;
constexpr int exit_usage = exit_status::usage;
constexpr int exit_not_run = exit_status::not_run;
constexpr int exit_kit_fault = exit_status::kit_fault;

constexpr const char* exit_code_help =
    "Exit status of `./grade lab` and `./grade all` (your files or --solution):\n"
    "  0 every check ran and passed; 1 some check failed (a build error, a wrong answer, a crash\n"
    "  or a hang); 3 some checks could not run here (no CUDA GPU, too few GPUs, no MPI) and\n"
    "  nothing failed.\n"
    "Exit status of a batch (--submissions DIR): 0 every lab-submission was graded, whatever\n"
    "  the students scored (their failures are in the gradebook); 3 some could not run here (no\n"
    "  CUDA GPU, too few GPUs) and are graded by running the same command where they can;\n"
    "  with --expect: 0 all verdicts agree, 1 a mismatch, 77 none could run here.\n"
    "Every command: 2 bad input (an unknown lab or case, a file or folder that cannot be read,\n"
    "  an empty submissions folder, a bad option): the message names it; 4 a fault of the kit\n"
    "  itself (the ./grade launcher also exits 4 when the kit does not build).";

void list_labs(const std::vector<grade::LabSpec>& labs) {
  for (const grade::LabSpec& lab : labs) {
    std::cout << lab.id << "  " << lab.name << "  " << lab.title << "  (" << grade::max_points(lab)
              << " points; you edit: ";
    for (std::size_t i = 0; i < lab.student_files.size(); ++i)
      std::cout << (i ? ", " : "") << "labs/" << lab.dir << "/" << lab.student_files[i];
    std::cout << ")\n";
  }
}

// The instructor's secret (LABKIT_SECRET, or the file --secret-file names) changes every
// input the students' code sees, so outputs hard-coded from the public seeds fail. Child
// processes never see it, only the seed derived from it.
std::string read_secret(const std::string& secret_file) {
  std::string secret;
  if (!secret_file.empty()) {
    std::ifstream in(secret_file);
    if (!in) throw grade::BadInput("cannot read the secret file " + secret_file + " (--secret-file)");
    std::getline(in, secret);  // empty: no secret (a --slurm submit without one writes such a file)
  } else if (const char* from_environment = std::getenv(labkit::protocol::env::secret)) {
    secret = from_environment;
  }
  return secret;
}

std::uint64_t seed_of_secret(const std::string& secret) {
  std::uint64_t h = 0;
  for (unsigned char c : secret) h = labkit::splitmix64(h ^ c);
  return h;
}

std::uint64_t secret_seed(const std::string& secret_file) { return seed_of_secret(read_secret(secret_file)); }

void print_batch_summary(const std::vector<grade::Report>& reports, const std::vector<grade::LabSpec>& labs,
                         double seconds, std::size_t labs_graded, const fs::path& out) {
  std::fputs(grade::batch_summary(reports, labs).c_str(), stdout);
  const std::size_t ran = grade::ran_on_gpu_this_run();
  // Without a GPU nothing ran: neither "graded" nor a rate would be true.
  if (ran == 0)
    std::printf("\n%zu submissions; %zu lab-submissions taken in and compiled in %.0f s, none of them run on a GPU",
                reports.size(), labs_graded, seconds);
  else
    std::printf("\n%zu submissions; %zu lab-submissions graded in %.0f s, %zu of them compiled and run",
                reports.size(), labs_graded, seconds, ran);
  if (seconds > 0 && ran > 0)
    std::printf("\nbatch rate: %.0f lab-submissions per hour (%.0f compiled-and-run per hour)",
                3600.0 * double(labs_graded) / seconds, 3600.0 * double(ran) / seconds);
  std::printf("\n%s\n", grade::batch_files_line(out).c_str());
}

// What the platforms' files lack for want of a roster or in it (roster_warnings), said once.
void warn_of_roster_gaps(const grade::Roster& roster, const std::vector<grade::Report>& reports) {
  std::vector<std::string> folders;
  for (const grade::Report& report : reports) folders.push_back(report.who);
  for (const std::string& warning : grade::roster_warnings(roster, folders))
    std::cerr << "grade: warning: " << warning << "\n";
}

int report_expectations(const grade::ExpectationCheck& check) {
  for (const std::string& error : check.errors) std::printf("ERROR %s\n", error.c_str());
  for (const std::string& mismatch : check.mismatches) std::printf("MISMATCH %s\n", mismatch.c_str());
  std::printf("expected verdicts: %zu checked, %zu mismatched, %zu need a GPU and were not run here\n",
              check.checked, check.mismatches.size(), check.needs_gpu);
  if (!check.errors.empty() || !check.mismatches.empty()) return exit_some_failed;
  if (check.checked == 0 && check.needs_gpu == 0) {
    std::printf("ERROR nothing was checked: no submission's expected.yaml names a lab graded in this run\n");
    return exit_some_failed;
  }
  if (check.checked == 0 && check.needs_gpu > 0) {
    std::printf("SKIPPED: no CUDA GPU here: these verdicts need one\n");
    return exit_status::skipped;
  }
  return exit_all_passed;
}

// Reference timings are kept per GPU with the build they were measured with: build/calibration/.
std::string calibration_folder(const grade::Toolchain& toolchain) {
  return (fs::path(toolchain.build_root) / "calibration").string();
}

int calibrate(const std::vector<grade::LabSpec>& labs, const grade::Toolchain& toolchain,
              grade::GradeOptions options) {
  options.performance = true;
  int status = exit_all_passed;
  for (const grade::LabSpec& lab : labs) {
    if (lab.performance.empty()) continue;
    try {
      for (const nlohmann::json& record : grade::calibrate_lab(lab, toolchain, options))
        std::printf("lab %s %-32s reference %9.4f ms  (%s)\n", lab.id.c_str(), record.value("case", "").c_str(),
                    record["reference"].value("median_ms", 0.0), record.value("reference_source", "").c_str());
    } catch (const std::exception& error) {
      std::fprintf(stderr, "lab %s: %s\n", lab.id.c_str(), error.what());
      status = exit_not_run;
    }
  }
  if (status == exit_all_passed) std::printf("stored in %s\n", options.calibration_dir.c_str());
  return status;
}

// Everything a command line can say, as CLI11 fills it in (define_command_line).
struct CommandLine {
  bool solution = false, as_json = false, list = false, skip_performance = false, fresh = false;
  bool retime_reference = false, expect = false, sanitize = false, no_sanitize = false, use_slurm = false;
  bool undefended = false;
  bool list_build_targets = false;  // the ./grade launcher's question: what to build for this command
  std::uint64_t seed = 0;
  std::vector<std::string> lab_keys;
  std::string submissions_dir, out_dir, secret_file, roster_file, results_dir;
  int jobs = int(std::max(1u, std::thread::hardware_concurrency()));
  int gpus = 0, time_limit = 0, runs_per_gpu = 0;
  std::string export_lab, export_case, profile_lab, profile_case;
  grade::slurm::SlurmOptions slurm;
  std::string task_plan, task_array;
  int task_index = -1;
  // The verbs; `parsed()` says which one was given.
  CLI::App *lab = nullptr, *all = nullptr, *selftest = nullptr, *export_case_command = nullptr, *profile = nullptr,
           *calibrate = nullptr, *collect = nullptr, *slurm_task = nullptr, *docs = nullptr,
           *similarity = nullptr, *board = nullptr;
};

// A count or a number of seconds: `least` or more. (CLI11's own ranges name the type's limits.)
CLI::Validator at_least(int least) {
  return CLI::Validator(
      [least](std::string& value) -> std::string {
        try {
          if (std::stoll(value) >= least) return "";
        } catch (const std::exception&) {
          return "";  // not a number: the option's own conversion says so
        }
        return "must be " + std::to_string(least) + " or more, not " + value;
      },
      "N>=" + std::to_string(least));
}

void define_grading_options(CLI::App& app, CommandLine& line) {
  app.add_flag("--solution", line.solution, "grade the reference solutions instead of the student files");
  app.add_flag("--json", line.as_json, "print the report as JSON instead of text");
  app.add_flag("--list", line.list, "list the labs and exit (with --json: the catalog as JSON, for scripts)");
  app.add_flag("--no-performance", line.skip_performance, "run the correctness cases only");
  app.add_option("--seed", line.seed, "change every case's inputs (same cases, new random data)");
  app.add_option("--submissions", line.submissions_dir,
                 "grade every subfolder of DIR as one student's submission (a clone of the kit or the "
                 "student files alone), with `all` or `lab`")->check(CLI::ExistingDirectory);
  app.add_option("--out", line.out_dir,
                 "where the reports go (a batch's: default build/reports/<DIR's name>; yours: build/reports; "
                 "export's: build/exports/<lab>)");
  app.add_option("--roster", line.roster_file,
                 "with --submissions: a CSV (folder,student_id,name,email) that puts the students' ids, names and "
                 "emails in the gradebook and the files for Canvas and Gradescope; with board, its handle column "
                 "names the students shown")->check(CLI::ExistingFile);
  app.add_option("--jobs", line.jobs, "compiles in parallel (default: the CPU cores)")->check(at_least(1));
  app.add_option("--gpus", line.gpus, "GPUs to spread runs over (default: all that nvidia-smi lists)")
      ->check(at_least(1));
  app.add_option("--runs-per-gpu", line.runs_per_gpu,
                 "with --submissions: labs checked at once on each GPU (default: one per 12 GiB of GPU memory, "
                 "at most 6; timing always has the GPU alone, and a lab waiting to time gives its place to the next)")
      ->check(at_least(1));
  app.add_option("--secret-file", line.secret_file,
                 "instructor secret mixed into every seed (or set LABKIT_SECRET); a batch without one warns, "
                 "and its gradebook says so")->check(CLI::ExistingFile);
  app.add_option("--time-limit", line.time_limit, "seconds each lab's checks may run (default: the lab's rubric)")
      ->check(at_least(1));
  app.add_flag("--fresh", line.fresh, "grade a batch again even where nothing changed");
  app.add_flag("--retime-reference", line.retime_reference,
               "time the reference solution in this run instead of taking its times from the calibration cache");
  app.add_flag("--expect", line.expect,
               "check each submission against the expected.yaml in its folder (the red-team corpus); "
               "exit 0 when all agree, 1 on a mismatch, 77 when none could run here (no GPU)");
  app.add_flag("--undefended", line.undefended,
               "with --expect: grade each red-team entry again with the defences its `undefended:` block names "
               "switched off, and check that its attack then wins (a test of the kit, never a grading run)")
      ->needs("--expect");
  app.add_flag("--sanitize", line.sanitize,
               "run compute-sanitizer on the failing correctness cases (or, when none fails, the first few); "
               "`grade lab` does this for failing cases anyway, a batch (--submissions) only with this flag");
  app.add_flag("--no-sanitize", line.no_sanitize, "never run compute-sanitizer");
  app.add_flag("--list-build-targets", line.list_build_targets)->group("");  // hidden: for the launcher
}

// The grading options above that a --slurm submit hands on to its jobs (whose command lines
// it writes): keep in step with define_grading_options.
std::vector<std::string> grading_arguments_for_jobs(const CommandLine& line) {
  std::vector<std::string> arguments = {"--seed", std::to_string(line.seed)};
  if (line.skip_performance) arguments.push_back("--no-performance");
  if (line.time_limit > 0) arguments.insert(arguments.end(), {"--time-limit", std::to_string(line.time_limit)});
  if (line.retime_reference) arguments.push_back("--retime-reference");
  if (line.sanitize) arguments.push_back("--sanitize");
  if (!line.roster_file.empty())  // for the collect job's gradebook
    arguments.insert(arguments.end(), {"--roster", fs::absolute(line.roster_file).lexically_normal().string()});
  return arguments;
}

void define_verbs(CLI::App& app, CommandLine& line) {
  line.lab = app.add_subcommand("lab", "grade the labs named (number, name or folder)");
  line.lab->add_option("labs", line.lab_keys, "e.g. 01, histogram or 01-histogram")->required();
  line.all = app.add_subcommand("all", "grade every lab");
  // The ./grade launcher runs it (meson test); listed here so that --help shows every verb.
  line.selftest =
      app.add_subcommand("selftest", "the kit's own tests, what CI runs (the ./grade launcher runs `meson test`)");
  line.selftest->allow_extras();
  line.export_case_command =
      app.add_subcommand("export", "write a case's input and expected output as .npy files (without a GPU: "
                                "the arrays the checks compute on the CPU)");
  line.export_case_command->add_option("lab", line.export_lab, "the lab (number, name or folder)")->required();
  line.export_case_command->add_option("case", line.export_case, "the case's name in the lab's dataset")->required();
  line.profile = app.add_subcommand(
      "profile", "run a lab's main performance case under Nsight Compute (ncu), yours beside the reference's");
  line.profile->add_option("lab", line.profile_lab, "the lab (number, name or folder)")->required();
  line.profile->add_option("--case", line.profile_case, "the performance case (default: the first in lab.yaml)");
  line.calibrate = app.add_subcommand(
      "calibrate", "time the reference solutions afresh and keep the times for later runs on this GPU (needs a GPU)");
  line.calibrate->add_option("labs", line.lab_keys, "the labs (default: all)");
  line.similarity = app.add_subcommand(
      "similarity", "with --submissions DIR: per lab, the pairs of submissions that share code, ranked, in HTML and "
                    "CSV (the starter's own lines left out; needs sim_c++, Debian's similarity-tester)");
  line.similarity->add_option("--lab", line.lab_keys, "the labs (default: all)");
  line.board = app.add_subcommand(
      "board", "with --results DIR --roster FILE: the class speed board of a graded batch: per lab, the correct "
               "submissions ranked by their ratio to the reference, beside the library's, in HTML and CSV; only "
               "students the roster gives a handle are shown (no GPU needed: nothing is timed again)");
  line.board->add_option("--results", line.results_dir, "the folder the batch wrote (its gradebook.csv, students/)")
      ->required()
      ->check(CLI::ExistingDirectory);
  line.docs = app.add_subcommand(
      "docs", "render the READMEs' tables of what each lab's starter, chapter version and reference earn (from the "
              "records in grading/policy/h100/), the saved benchmarks and the rubrics' timed cases (from each "
              "lab.yaml), into their marked blocks (no GPU needed)");
}

// A class on a Slurm cluster (slurm.h, docs/slurm.md).
void define_slurm(CLI::App& app, CommandLine& line) {
  app.add_flag("--slurm", line.use_slurm,
               "with --submissions: compile here, run the labs as Slurm job arrays, collect in a dependent job");
  app.add_option("--partition", line.slurm.partition, "Slurm partition for the jobs")->group("Slurm");
  app.add_option("--gres", line.slurm.gres,
                 "GPU request per task, scaled to a lab's GPUs (default gpu:1; none: no gres)")->group("Slurm");
  app.add_option("--array-limit", line.slurm.array_limit, "tasks of an array running at once (default: no limit)")
      ->check(at_least(1))->group("Slurm");
  app.add_option("--shard-size", line.slurm.shard_size, "lab-submissions per task (default 4)")
      ->check(at_least(1))->group("Slurm");
  app.add_option("--sbatch-option", line.slurm.sbatch_options, "passed to every job, e.g. --sbatch-option=--account=X")
      ->group("Slurm");
  line.collect = app.add_subcommand(
      "collect", "write the gradebook and reports of DIR's submissions from saved results (after --slurm)");
  line.collect->add_option("dir", line.submissions_dir, "the submissions folder")->required()->check(CLI::ExistingDirectory);
  line.collect->add_option("labs", line.lab_keys, "the labs (default: all)");
  line.slurm_task = app.add_subcommand("slurm-task", "one task of a --slurm job array (run by Slurm)");
  line.slurm_task->group("");
  line.slurm_task->add_option("plan", line.task_plan)->required();
  line.slurm_task->add_option("array", line.task_array)->required();
  line.slurm_task->add_option("task", line.task_index)->required();
}

void define_command_line(CLI::App& app, CommandLine& line) {
  app.footer(exit_code_help);
  define_grading_options(app, line);
  define_verbs(app, line);
  define_slurm(app, line);
  // Flags may come before or after the verb: `grade lab 01 --solution` works too.
  for (CLI::App* verb : {line.lab, line.all, line.export_case_command, line.profile, line.calibrate, line.collect,
                         line.slurm_task, line.similarity, line.board})
    verb->fallthrough()->footer("The options below go before or after the verb.");
}

// Where a command's files go: the folder --out names, else one under the build folder. What
// the grader writes never goes into the kit's sources, which a student commits and hands in.
fs::path output_folder(const CommandLine& line, const grade::Toolchain& toolchain, const fs::path& under_build) {
  return line.out_dir.empty() ? fs::path(toolchain.build_root) / under_build : fs::path(line.out_dir);
}

// The labs named (each once: `lab 01 1 histogram` is lab 01), or every lab.
std::vector<grade::LabSpec> chosen_labs(const CommandLine& line, const std::vector<grade::LabSpec>& catalog) {
  const bool named = line.lab->parsed() ||
                     ((line.calibrate->parsed() || line.collect->parsed() || line.similarity->parsed()) &&
                      !line.lab_keys.empty());
  if (!named) return catalog;
  std::vector<grade::LabSpec> chosen;
  for (const std::string& key : line.lab_keys) {
    const grade::LabSpec& lab = grade::find_lab(catalog, key);
    if (std::none_of(chosen.begin(), chosen.end(), [&](const grade::LabSpec& c) { return c.dir == lab.dir; }))
      chosen.push_back(lab);
  }
  return chosen;
}

grade::BatchOptions batch_options(const CommandLine& line, const grade::Toolchain& toolchain,
                                  const std::string& secret) {
  grade::BatchOptions options;
  options.grade = {labkit::mix_seeds(line.seed, seed_of_secret(secret)), !line.skip_performance, line.time_limit};
  // A student's own run looks at failing cases under compute-sanitizer by default; a class's
  // batch only when asked, as it costs GPU time per failing lab.
  const bool batch = !line.submissions_dir.empty();
  options.grade.sanitize = line.no_sanitize ? grade::SanitizeWhen::never
                           : line.sanitize  ? (batch ? grade::SanitizeWhen::failures : grade::SanitizeWhen::always)
                           : batch          ? grade::SanitizeWhen::never
                                            : grade::SanitizeWhen::failures;
  if (!line.retime_reference) options.grade.calibration_dir = calibration_folder(toolchain);
  options.build_workers = line.jobs;
  options.gpu_count = line.gpus > 0 ? line.gpus : grade::count_gpus();
  // Where CUDA_VISIBLE_DEVICES lists the GPUs (Slurm's, or the user's), runs go to its entries
  // (grade::visible_devices): asking for more would put runs on devices nobody gave the batch.
  if (const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
      visible != nullptr && *visible != '\0' && options.gpu_count > grade::count_gpus())
    throw grade::BadInput("--gpus " + std::to_string(options.gpu_count) + " asks for more GPUs than CUDA_VISIBLE_DEVICES=" +
                          visible + " lists (" + std::to_string(grade::count_gpus()) + ")");
  options.runs_per_gpu = line.runs_per_gpu > 0 ? line.runs_per_gpu : grade::default_runs_per_gpu();
  return options;
}

int profile(const CommandLine& line, const std::vector<grade::LabSpec>& catalog, const grade::Toolchain& toolchain) {
  const std::string who = line.solution ? "solution" : "student";
  const std::string base = line.solution ? toolchain.source_root + "/solutions" : toolchain.source_root;
  const grade::LabSpec& lab = grade::find_lab(catalog, line.profile_lab);
  grade::GradeOptions profiling;
  profiling.seed = labkit::mix_seeds(line.seed, secret_seed(line.secret_file));
  const std::string work = (fs::path(toolchain.build_root) / "grade" / "profile" / who / lab.dir).string();
  try {
    return grade::profile_lab({&lab, who, grade::find_student_dir(lab, base), work}, line.profile_case, toolchain,
                              profiling);
  } catch (const grade::BadInput& error) {  // no such case: the command line's fault
    std::cerr << "grade profile: " << error.what() << "\n";
    return exit_usage;
  }
}

// Submits a --slurm batch; true when jobs were submitted (the collect job writes the gradebook).
bool submit_to_slurm(const CommandLine& line, const std::vector<grade::Submission>& submissions,
                     const std::vector<grade::LabSpec>& chosen, const grade::Toolchain& toolchain,
                     const grade::BatchOptions& options, const fs::path& out, const std::string& secret) {
  const grade::slurm::ScriptContext context{
      (fs::path(toolchain.build_root) / "harness" / "grade" / "labkit-grade").string(),
      fs::absolute(line.submissions_dir).lexically_normal().string(), fs::absolute(out).lexically_normal().string(),
      {}, {}, grading_arguments_for_jobs(line), line.lab->parsed() ? line.lab_keys : std::vector<std::string>{}};
  return grade::slurm::submit({submissions, chosen, toolchain, options, line.slurm, context, secret}) > 0;
}

// A roster kept in the class folder is the instructor's file, not a student's submission.
void leave_out_roster(std::vector<grade::Submission>& submissions, const std::string& roster_file) {
  if (roster_file.empty()) return;
  std::error_code ignored;
  submissions.erase(std::remove_if(submissions.begin(), submissions.end(),
                                   [&](const grade::Submission& s) { return fs::equivalent(s.base, roster_file, ignored); }),
                    submissions.end());
}

std::vector<std::string> lab_ids(const std::vector<grade::LabSpec>& catalog) {
  std::vector<std::string> ids;
  for (const grade::LabSpec& lab : catalog) ids.push_back(lab.id);
  return ids;
}

// `--expect --undefended`: each group of red-team entries graded again with the defences
// their `undefended:` blocks name switched off (for the runners, through the environment they
// inherit), in work and output folders of its own, never reused, and checked against those blocks.
grade::ExpectationCheck grade_undefended(const CommandLine& line, const std::vector<grade::Submission>& submissions,
                                         const std::vector<grade::LabSpec>& chosen, const grade::Toolchain& toolchain,
                                         grade::BatchOptions options, const fs::path& out,
                                         const std::vector<std::string>& known_labs) {
  grade::ExpectationCheck check;
  const auto groups = grade::group_by_undefended(submissions, check.errors);
  options.reuse_saved = false;
  const std::string work_dir = options.work_dir;
  for (const auto& [defences, group] : groups) {
    std::printf("grading %zu entries again with these defences off: %s\n", group.size(), defences.c_str());
    setenv(labkit::env::disabled_defences, defences.c_str(), 1);
    options.work_dir = work_dir + "-undefended/" + defences;
    auto reports = grade::grade_batch(group, chosen, toolchain, options);
    unsetenv(labkit::env::disabled_defences);
    grade::write_batch_outputs(reports, chosen, (out / "undefended" / defences).string(), {});
    grade::add_check(check, grade::check_expectations(reports, line.submissions_dir, known_labs, true));
  }
  return check;
}

// `--submissions DIR`: a class, on this machine, on Slurm, or collected after Slurm.
int grade_class(const CommandLine& line, const std::vector<grade::LabSpec>& catalog,
                const std::vector<grade::LabSpec>& chosen, const grade::Toolchain& toolchain) {
  std::string secret = read_secret(line.secret_file);
  grade::BatchOptions options = batch_options(line, toolchain, secret);
  const fs::path name = grade::class_name(line.submissions_dir);
  const fs::path out = output_folder(line, toolchain, fs::path("reports") / name);
  options.work_dir = grade::batch_work_dir(toolchain.build_root, out.string());
  options.reuse_saved = !line.fresh;
  // After --slurm, collect finds the secret where the submit left it.
  if (const fs::path kept = out / "slurm" / "secret"; line.collect->parsed() && secret.empty() && fs::exists(kept)) {
    secret = read_secret(kept.string());
    options.grade.seed = labkit::mix_seeds(line.seed, seed_of_secret(secret));
  }
  auto submissions = grade::find_submissions(line.submissions_dir);
  const grade::Roster roster = grade::read_roster(line.roster_file);  // a bad roster stops here, before any grading
  leave_out_roster(submissions, line.roster_file);
  if (line.expect)
    grade::use_kit_files(submissions, toolchain.source_root, (fs::path(options.work_dir) / "kit-files").string());
  const bool slurm_task = line.slurm_task->parsed();
  if (secret.empty() && !slurm_task)
    std::cerr << "grade: warning: no instructor secret (set LABKIT_SECRET or pass --secret-file): every input "
                 "follows the public seeds, so answers hard-coded from them pass; the gradebook records it\n";
  if (slurm_task)
    return grade::slurm::run_task(line.task_plan, line.task_array, line.task_index, submissions, catalog, toolchain,
                                  options);
  if (line.use_slurm && submit_to_slurm(line, submissions, chosen, toolchain, options, out, secret))
    return exit_all_passed;

  const auto started = std::chrono::steady_clock::now();
  auto reports = line.use_slurm || line.collect->parsed()
                     ? grade::slurm::collect(submissions, chosen, toolchain, options)
                     : grade::grade_batch(submissions, chosen, toolchain, options);
  for (grade::Report& report : reports) report.secret_used = !secret.empty();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  grade::write_batch_outputs(reports, chosen, out.string(), roster);
  print_batch_summary(reports, chosen, seconds, grade::graded_this_run(), out);
  if (!line.expect) warn_of_roster_gaps(roster, reports);  // the red-team corpus has no students
  if (!line.expect) return grade::batch_exit_status(reports);
  const std::vector<std::string> known_labs = lab_ids(catalog);
  grade::ExpectationCheck check = grade::check_expectations(reports, line.submissions_dir, known_labs);
  if (line.undefended) grade::add_check(check, grade_undefended(line, submissions, chosen, toolchain, options, out, known_labs));
  return report_expectations(check);
}

// The labs whose programs this command runs: none for --list, similarity and the like.
std::vector<grade::LabSpec> labs_run(const CommandLine& line, const std::vector<grade::LabSpec>& catalog) {
  if (line.list) return {};
  if (line.export_case_command->parsed()) return {grade::find_lab(catalog, line.export_lab)};
  if (line.profile->parsed()) return {grade::find_lab(catalog, line.profile_lab)};
  for (const CLI::App* verb : {line.lab, line.all, line.calibrate, line.collect, line.slurm_task})
    if (verb->parsed()) return chosen_labs(line, catalog);
  return {};
}

// `grade similarity --submissions DIR`: per lab, an HTML and a CSV report of the pairs that
// share code, and the first pairs on the console.
int similarity(const CommandLine& line, const std::vector<grade::LabSpec>& chosen,
               const grade::Toolchain& toolchain) {
  if (line.submissions_dir.empty())
    throw grade::BadInput("similarity compares a class: give its folder with --submissions DIR");
  const std::string sim = grade::find_similarity_tester();
  if (sim.empty()) {
    std::cerr << "grade similarity: sim_c++ is not installed here; it comes with similarity-tester "
                 "(Debian, Ubuntu: sudo apt-get install similarity-tester)\n";
    return exit_not_run;
  }
  const auto submissions = grade::find_submissions(line.submissions_dir);
  const std::string name = grade::class_name(line.submissions_dir);
  const fs::path out = output_folder(line, toolchain, fs::path("reports") / name / "similarity");
  fs::create_directories(out);
  const fs::path work = fs::path(grade::batch_work_dir(toolchain.build_root, out.string())) / "similarity";
  for (const grade::LabSpec& lab : chosen) {
    const grade::LabSimilarity found = grade::compare_submissions(lab, submissions, sim, (work / lab.dir).string());
    std::ofstream(out / (lab.dir + ".html")) << grade::similarity_html(found, name);
    std::ofstream(out / (lab.dir + ".csv")) << grade::similarity_csv(found);
    std::cout << grade::similarity_summary(found, 3);
  }
  std::printf("Reports: %s/NN-name.{html,csv}\n", out.string().c_str());
  return exit_all_passed;
}

// `grade board --results DIR --roster FILE`: board.{html,csv} beside the batch's files (or under --out).
int board(const CommandLine& line) {
  if (line.roster_file.empty())
    throw grade::BadInput("the board shows students under the handles the roster gives them: pass --roster FILE "
                          "with a handle column");
  const grade::Roster roster = grade::read_roster(line.roster_file);
  const bool any_handle =
      std::any_of(roster.begin(), roster.end(), [](const auto& row) { return !row.second.handle.empty(); });
  if (!any_handle)
    std::cerr << "grade: warning: no student of the roster " << line.roster_file
              << " has a handle, so the board shows no one (the README's roster section says how to add them)\n";
  const std::string out = line.out_dir.empty() ? line.results_dir : line.out_dir;
  std::cout << grade::write_board(line.results_dir, roster, out);
  std::printf("Board: %s/board.{html,csv}\n", out.c_str());
  return exit_all_passed;
}

// `grade lab ...` / `grade all` on this checkout's files (or the reference solutions).
int grade_checkout(const CommandLine& line, const std::vector<grade::LabSpec>& chosen,
                   const grade::Toolchain& toolchain) {
  const std::string who = line.solution ? "solution" : "student";
  const std::string base = line.solution ? toolchain.source_root + "/solutions" : toolchain.source_root;
  grade::BatchOptions options = batch_options(line, toolchain, read_secret(line.secret_file));
  options.work_dir = (fs::path(toolchain.build_root) / "grade" / who).string();
  options.progress = false;
  options.grade.live_progress = isatty(STDERR_FILENO) != 0;  // quiet and line-oriented in CI and pipes
  std::cerr << "grade: building and running the checks of " << chosen.size() << " lab(s)...\n";
  grade::Report report = grade::grade_batch({{who, base}}, chosen, toolchain, options).front();
  report.mode = line.solution ? "reference solutions" : "student files";
  const fs::path reports_root = output_folder(line, toolchain, "reports");
  grade::write_run_reports(report, chosen, reports_root.string());
  if (line.as_json)
    std::cout << grade::json_text(grade::to_json(report)) << "\n";
  else
    std::cout << grade::to_text(report, true) << "\nReports: " << (reports_root / who).string() << ".{json,md,html}\n";
  return grade::exit_status_of(report);
}

// Whether any option was given (CLI11's count_all also counts the app itself, as it is named).
bool any_option_given(const CLI::App& app) {
  const auto options = app.get_options();
  return std::any_of(options.begin(), options.end(), [](const CLI::Option* option) { return option->count() > 0; });
}

int run(const CLI::App& app, const CommandLine& line) {
  const grade::Toolchain toolchain = grade::configured_toolchain();
  const std::vector<grade::LabSpec> catalog = grade::load_catalog(toolchain.source_root);
  if (line.list_build_targets) {
    for (const std::string& target : grade::build_targets(labs_run(line, catalog), toolchain.build_root))
      std::cout << target << "\n";
    return exit_all_passed;
  }
  if (line.selftest->parsed()) {
    std::cerr << "grade: run `./grade selftest` from the kit's folder: the launcher runs the tests with Meson\n";
    return exit_usage;
  }
  if (!line.list && app.get_subcommands().empty() && any_option_given(app)) {
    std::cerr << "grade: say what to grade: `./grade all ...` or `./grade lab 01 ...` (options alone grade "
                 "nothing); see ./grade --help\n";
    return exit_usage;
  }
  if (line.list && line.as_json) {
    std::cout << grade::catalog_json(catalog).dump(2) << "\n";
    return exit_all_passed;
  }
  if (line.list || app.get_subcommands().empty()) {
    list_labs(catalog);
    if (!line.list) std::cout << "\nGrade one with `./grade lab 01`, all with `./grade all`; see --help.\n";
    return exit_all_passed;
  }
  if (line.export_case_command->parsed()) {
    const grade::LabSpec& lab = grade::find_lab(catalog, line.export_lab);
    const fs::path out = output_folder(line, toolchain, fs::path("exports") / lab.dir);
    return grade::export_case(lab, line.export_case, toolchain, line.seed, out.string());
  }
  if (line.profile->parsed()) return profile(line, catalog, toolchain);
  if (line.docs->parsed()) return grade::docs::write_all(toolchain.source_root, catalog);
  if (line.board->parsed()) return board(line);
  const std::vector<grade::LabSpec> chosen = chosen_labs(line, catalog);
  if (line.similarity->parsed()) return similarity(line, chosen, toolchain);
  if (line.calibrate->parsed())
    return calibrate(chosen, toolchain, batch_options(line, toolchain, read_secret(line.secret_file)).grade);
  grade::stop_children_on_interrupt();
  if (line.slurm_task->parsed() && line.submissions_dir.empty())
    throw grade::BadInput("slurm-task needs --submissions DIR (the job script passes it)");
  if (!line.roster_file.empty() && line.submissions_dir.empty())
    throw grade::BadInput("--roster goes with --submissions DIR (or collect DIR): it names a class's folders");
  if (!line.submissions_dir.empty()) return grade_class(line, catalog, chosen, toolchain);
  return grade_checkout(line, chosen, toolchain);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Builds and grades the CUDA lab kit's labs on this machine's GPU.", "./grade"};
  CommandLine line;
  define_command_line(app, line);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {  // a verb's options are the app's: its help ends with them all
    for (const CLI::App* verb : app.get_subcommands()) std::cout << verb->help() << "\n";
    std::cout << app.get_formatter()->make_help(&app, app.get_name(), CLI::AppFormatMode::Normal);
    return exit_all_passed;
  } catch (const CLI::ParseError& error) {
    const int printed = app.exit(error);
    return printed == 0 ? exit_all_passed : exit_usage;
  }
  if (const char* disabled = std::getenv(labkit::env::disabled_defences))
    std::cerr << "grade: warning: " << labkit::env::disabled_defences << "=" << disabled
              << " switches the grader's defences off: a test of the kit, not a grading run\n";
  try {
    return run(app, line);
  } catch (const grade::BadInput& error) {  // the user's typo, not the kit's fault
    std::cerr << "grade: " << error.what() << "\n";
    return exit_usage;
  } catch (const std::exception& error) {
    std::cerr << "grade: the kit failed: " << error.what() << "\n";
    return exit_kit_fault;
  }
}
