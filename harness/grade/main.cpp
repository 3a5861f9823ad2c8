// labkit-grade: the `grade` command. The `./grade` launcher at the repository root builds
// this program (and the lab runners) with Meson, then runs it.
#include "bad_input.h"
#include "batch.h"
#include "catalog.h"
#include "expect.h"
#include "exports.h"
#include "grader.h"
#include "model.h"
#include "slurm.h"

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
  std::printf("\n%zu submissions; %zu lab-submissions graded in %.0f s, %zu of them compiled and run", reports.size(),
              labs_graded, seconds, ran);
  if (seconds > 0)
    std::printf("\nbatch rate: %.0f lab-submissions per hour (%.0f compiled-and-run per hour)",
                3600.0 * double(labs_graded) / seconds, 3600.0 * double(ran) / seconds);
  std::printf("\nGradebook: %s/gradebook.csv; to hand back: handout/; for course platforms: canvas-import.csv, "
              "gradescope-scores.csv, gradescope/, prairielearn/; also junit.xml, students/\n",
              out.string().c_str());
}

// Folders the roster does not list get no ids in the platforms' files: say which, once.
void warn_of_roster_gaps(const grade::Roster& roster, const std::vector<grade::Report>& reports) {
  if (roster.empty()) return;
  std::vector<std::string> folders;
  for (const grade::Report& report : reports) folders.push_back(report.who);
  const std::vector<std::string> missing = grade::folders_missing_from(roster, folders);
  if (missing.empty()) return;
  std::string names;
  for (const std::string& folder : missing) names += (names.empty() ? "" : ", ") + folder;
  std::cerr << "grade: warning: the roster does not list " << missing.size()
            << " submission folder(s), so the platforms' files carry no id for them: " << names << "\n";
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

// Reference timings are kept per GPU in the checkout (not in git): grading/calibration/.
std::string calibration_folder(const grade::Toolchain& toolchain) {
  return (fs::path(toolchain.source_root) / "grading" / "calibration").string();
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

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Builds and grades the CUDA lab kit's labs on this machine's GPU.", "./grade"};
  app.footer(exit_code_help);
  bool solution = false, as_json = false, list = false, skip_performance = false, fresh = false;
  std::uint64_t seed = 0;
  std::vector<std::string> lab_keys;
  std::string submissions_dir, out_dir, secret_file;
  int jobs = std::max(1u, std::thread::hardware_concurrency());
  int gpus = 0, time_limit = 0, runs_per_gpu = 3;
  app.add_flag("--solution", solution, "grade the reference solutions instead of the student files");
  app.add_flag("--json", as_json, "print the report as JSON instead of text");
  app.add_flag("--list", list, "list the labs and exit");
  app.add_flag("--no-performance", skip_performance, "run the correctness cases only");
  app.add_option("--seed", seed, "change every case's inputs (same cases, new random data)");
  app.add_option("--submissions", submissions_dir,
                 "grade every subfolder of DIR as one student's submission (a clone of the kit or the "
                 "student files alone), with `all` or `lab`")->check(CLI::ExistingDirectory);
  app.add_option("--out", out_dir, "where a batch's gradebook goes (default grading/reports/<DIR's name>)");
  std::string roster_file;
  app.add_option("--roster", roster_file,
                 "with --submissions: a CSV (folder,student_id,name,email) that puts the students' ids, names and "
                 "emails in the gradebook and the files for Canvas and Gradescope")->check(CLI::ExistingFile);
  app.add_option("--jobs", jobs, "compiles in parallel (default: the CPU cores)");
  app.add_option("--gpus", gpus, "GPUs to spread runs over (default: all that nvidia-smi lists)");
  app.add_option("--runs-per-gpu", runs_per_gpu,
                 "with --submissions: labs checked at once on each GPU (default 3; timing always has the GPU alone)");
  app.add_option("--secret-file", secret_file,
                 "instructor secret mixed into every seed (or set LABKIT_SECRET); a batch without one warns, "
                 "and its gradebook says so")->check(CLI::ExistingFile);
  app.add_option("--time-limit", time_limit, "seconds each lab's checks may run (default: the lab's rubric)");
  app.add_flag("--fresh", fresh, "grade a batch again even where nothing changed");
  bool retime_reference = false;
  app.add_flag("--retime-reference", retime_reference,
               "time the reference solution in this run instead of taking its times from the calibration cache");
  bool expect = false;
  app.add_flag("--expect", expect,
               "check each submission against the expected.yaml in its folder (the red-team corpus); "
               "exit 0 when all agree, 1 on a mismatch, 77 when none could run here (no GPU)");
  bool sanitize = false, no_sanitize = false;
  app.add_flag("--sanitize", sanitize,
               "run compute-sanitizer on the failing correctness cases (or, when none fails, the first few); "
               "`grade lab` does this for failing cases anyway, a batch (--submissions) only with this flag");
  app.add_flag("--no-sanitize", no_sanitize, "never run compute-sanitizer");
  CLI::App* lab_command = app.add_subcommand("lab", "grade the labs named (number, name or folder)");
  lab_command->add_option("labs", lab_keys, "e.g. 01, histogram or 01-histogram")->required();
  CLI::App* all_command = app.add_subcommand("all", "grade every lab");
  // The ./grade launcher runs it (meson test); listed here so that --help shows every verb.
  CLI::App* selftest_command =
      app.add_subcommand("selftest", "the kit's own tests, what CI runs (the ./grade launcher runs `meson test`)");
  selftest_command->allow_extras();
  std::string export_lab, export_case;
  CLI::App* export_command =
      app.add_subcommand("export", "write a case's input and expected output as .npy files (needs a GPU)");
  export_command->add_option("lab", export_lab, "the lab (number, name or folder)")->required();
  export_command->add_option("case", export_case, "the case's name in the lab's dataset")->required();
  export_command->fallthrough();
  std::string profile_lab_key, profile_case;
  CLI::App* profile_command = app.add_subcommand(
      "profile", "run a lab's main performance case under Nsight Compute (ncu), yours beside the reference's");
  profile_command->add_option("lab", profile_lab_key, "the lab (number, name or folder)")->required();
  profile_command->add_option("--case", profile_case, "the performance case (default: the first in lab.yaml)");
  profile_command->fallthrough();
  CLI::App* calibrate_command = app.add_subcommand(
      "calibrate", "time the reference solutions afresh and keep the times for later runs on this GPU (needs a GPU)");
  calibrate_command->add_option("labs", lab_keys, "the labs (default: all)");
  calibrate_command->fallthrough();
  // A class on a Slurm cluster (slurm.h, grading/slurm/README.md).
  bool use_slurm = false;
  grade::slurm::SlurmOptions slurm;
  app.add_flag("--slurm", use_slurm,
               "with --submissions: compile here, run the labs as Slurm job arrays, collect in a dependent job");
  app.add_option("--partition", slurm.partition, "Slurm partition for the jobs")->group("Slurm");
  app.add_option("--gres", slurm.gres, "GPU request per task, scaled to a lab's GPUs (default gpu:1; none: no gres)")
      ->group("Slurm");
  app.add_option("--array-limit", slurm.array_limit, "tasks of an array running at once (default: no limit)")
      ->group("Slurm");
  app.add_option("--shard-size", slurm.shard_size, "lab-submissions per task (default 4)")->group("Slurm");
  app.add_option("--sbatch-option", slurm.sbatch_options, "passed to every job, e.g. --sbatch-option=--account=X")
      ->group("Slurm");
  CLI::App* collect_command = app.add_subcommand(
      "collect", "write the gradebook and reports of DIR's submissions from saved results (after --slurm)");
  collect_command->add_option("dir", submissions_dir, "the submissions folder")->required()->check(CLI::ExistingDirectory);
  collect_command->add_option("labs", lab_keys, "the labs (default: all)");
  std::string task_plan, task_array;
  int task_index = -1;
  CLI::App* task_command = app.add_subcommand("slurm-task", "one task of a --slurm job array (run by Slurm)");
  task_command->group("");
  task_command->add_option("plan", task_plan)->required();
  task_command->add_option("array", task_array)->required();
  task_command->add_option("task", task_index)->required();
  // Flags may come before or after the subcommand: `grade lab 01 --solution` works too.
  lab_command->fallthrough();
  all_command->fallthrough();
  collect_command->fallthrough();
  task_command->fallthrough();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {  // --help is one too, and exits 0
    const int printed = app.exit(error);
    return printed == 0 ? exit_all_passed : exit_usage;
  }

  try {
    const grade::Toolchain toolchain = grade::configured_toolchain();
    const std::vector<grade::LabSpec> catalog = grade::load_catalog(toolchain.source_root);
    if (selftest_command->parsed()) {
      std::cerr << "grade: run `./grade selftest` from the kit's folder: the launcher runs the tests with Meson\n";
      return exit_usage;
    }
    if (!list && app.get_subcommands().empty() && app.count_all() > 0) {
      std::cerr << "grade: say what to grade: `./grade all ...` or `./grade lab 01 ...` (options alone grade "
                   "nothing); see ./grade --help\n";
      return exit_usage;
    }
    if (list || app.get_subcommands().empty()) {
      list_labs(catalog);
      if (!list) std::cout << "\nGrade one with `./grade lab 01`, all with `./grade all`; see --help.\n";
      return exit_all_passed;
    }
    if (export_command->parsed()) {
      const fs::path out = out_dir.empty() ? fs::path(toolchain.source_root) / "grading" / "exports" : fs::path(out_dir);
      return grade::export_case(grade::find_lab(catalog, export_lab), export_case, toolchain, seed, out.string());
    }
    const std::string who = solution ? "solution" : "student";
    const std::string base = solution ? toolchain.source_root + "/solutions" : toolchain.source_root;
    if (profile_command->parsed()) {
      const grade::LabSpec& lab = grade::find_lab(catalog, profile_lab_key);
      grade::GradeOptions profiling;
      profiling.seed = labkit::mix_seeds(seed, secret_seed(secret_file));
      const std::string work = (fs::path(toolchain.build_root) / "grade" / "profile" / who / lab.dir).string();
      try {
        return grade::profile_lab({&lab, who, grade::find_student_dir(lab, base), work}, profile_case, toolchain,
                                  profiling);
      } catch (const grade::BadInput& error) {  // no such case: the command line's fault
        std::cerr << "grade profile: " << error.what() << "\n";
        return exit_usage;
      }
    }
    std::vector<grade::LabSpec> chosen;
    if (lab_command->parsed() || ((calibrate_command->parsed() || collect_command->parsed()) && !lab_keys.empty()))
      for (const std::string& key : lab_keys) {  // each lab once: `lab 01 1 histogram` is lab 01
        const grade::LabSpec& lab = grade::find_lab(catalog, key);
        if (std::none_of(chosen.begin(), chosen.end(), [&](const grade::LabSpec& c) { return c.dir == lab.dir; }))
          chosen.push_back(lab);
      }
    else
      chosen = catalog;

    grade::BatchOptions options;
    std::string secret = read_secret(secret_file);
    options.grade = {labkit::mix_seeds(seed, seed_of_secret(secret)), !skip_performance, time_limit};
    // A student's own run looks at failing cases under compute-sanitizer by default; a class's
    // batch only when asked, as it costs GPU time per failing lab.
    const bool batch = !submissions_dir.empty();
    options.grade.sanitize = no_sanitize ? grade::SanitizeWhen::never
                             : sanitize  ? (batch ? grade::SanitizeWhen::failures : grade::SanitizeWhen::always)
                             : batch     ? grade::SanitizeWhen::never
                                         : grade::SanitizeWhen::failures;
    if (!retime_reference) options.grade.calibration_dir = calibration_folder(toolchain);
    if (calibrate_command->parsed()) return calibrate(chosen, toolchain, options.grade);
    options.build_workers = jobs;
    options.gpu_count = gpus > 0 ? gpus : grade::count_gpus();
    options.runs_per_gpu = runs_per_gpu;
    const fs::path reports_root = fs::path(toolchain.source_root) / "grading" / "reports";
    grade::stop_children_on_interrupt();

    if (task_command->parsed() && submissions_dir.empty())
      throw grade::BadInput("slurm-task needs --submissions DIR (the job script passes it)");
    if (!submissions_dir.empty()) {
      const fs::path name = grade::class_name(submissions_dir);
      const fs::path out = out_dir.empty() ? reports_root / name : fs::path(out_dir);
      options.work_dir = (fs::path(toolchain.build_root) / "grade" / "batch" / name).string();
      options.reuse_saved = !fresh;
      // After --slurm, collect finds the secret where the submit left it.
      if (const fs::path kept = out / "slurm" / "secret"; collect_command->parsed() && secret.empty() && fs::exists(kept)) {
        secret = read_secret(kept.string());
        options.grade.seed = labkit::mix_seeds(seed, seed_of_secret(secret));
      }
      auto submissions = grade::find_submissions(submissions_dir);
      const grade::Roster roster = grade::read_roster(roster_file);  // a bad roster stops here, before any grading
      if (expect) grade::use_kit_files(submissions, toolchain.source_root);
      if (secret.empty() && !task_command->parsed())
        std::cerr << "grade: warning: no instructor secret (set LABKIT_SECRET or pass --secret-file): every input "
                     "follows the public seeds, so answers hard-coded from them pass; the gradebook records it\n";
      if (task_command->parsed())
        return grade::slurm::run_task(task_plan, task_array, task_index, submissions, catalog, toolchain, options);
      if (use_slurm) {
        std::vector<std::string> grading_args = {"--seed", std::to_string(seed)};
        if (skip_performance) grading_args.push_back("--no-performance");
        if (time_limit > 0) grading_args.insert(grading_args.end(), {"--time-limit", std::to_string(time_limit)});
        if (retime_reference) grading_args.push_back("--retime-reference");
        if (sanitize) grading_args.push_back("--sanitize");
        if (!roster_file.empty())  // for the collect job's gradebook
          grading_args.insert(grading_args.end(), {"--roster", fs::absolute(roster_file).lexically_normal().string()});
        const grade::slurm::ScriptContext context{
            (fs::path(toolchain.build_root) / "harness" / "grade" / "labkit-grade").string(),
            fs::absolute(submissions_dir).lexically_normal().string(), fs::absolute(out).lexically_normal().string(),
            {}, {}, grading_args, lab_command->parsed() ? lab_keys : std::vector<std::string>{}};
        if (grade::slurm::submit({submissions, chosen, toolchain, options, slurm, context, secret}) > 0)
          return exit_all_passed;  // the collect job writes the gradebook
      }
      const auto started = std::chrono::steady_clock::now();
      auto reports = use_slurm || collect_command->parsed()
                         ? grade::slurm::collect(submissions, chosen, toolchain, options)
                         : grade::grade_batch(submissions, chosen, toolchain, options);
      for (grade::Report& report : reports) report.secret_used = !secret.empty();
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      grade::write_batch_outputs(reports, chosen, out.string(), roster);
      print_batch_summary(reports, chosen, seconds, grade::graded_this_run(), out);
      warn_of_roster_gaps(roster, reports);
      if (expect) {
        std::vector<std::string> known_labs;
        for (const grade::LabSpec& lab : catalog) known_labs.push_back(lab.id);
        return report_expectations(grade::check_expectations(reports, submissions_dir, known_labs));
      }
      return grade::batch_exit_status(reports);
    }

    options.work_dir = (fs::path(toolchain.build_root) / "grade" / who).string();
    options.progress = false;
    options.grade.live_progress = isatty(STDERR_FILENO) != 0;  // quiet and line-oriented in CI and pipes
    std::cerr << "grade: building and running the checks of " << chosen.size() << " lab(s)...\n";
    grade::Report report = grade::grade_batch({{who, base}}, chosen, toolchain, options).front();
    report.mode = solution ? "reference solutions" : "student files";
    grade::write_run_reports(report, chosen, reports_root.string());
    if (as_json)
      std::cout << grade::to_json(report).dump(2) << "\n";
    else
      std::cout << grade::to_text(report, true) << "\nReports: " << (reports_root / who).string() << ".{json,md,html}\n";
    return grade::exit_status_of(report);
  } catch (const grade::BadInput& error) {  // the user's typo, not the kit's fault
    std::cerr << "grade: " << error.what() << "\n";
    return exit_usage;
  } catch (const std::exception& error) {
    std::cerr << "grade: the kit failed: " << error.what() << "\n";
    return exit_kit_fault;
  }
}
