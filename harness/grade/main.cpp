// labkit-grade: the `grade` command. The `./grade` launcher at the repository root builds
// this program (and the lab runners) with Meson, then runs it.
#include "catalog.h"
#include "grader.h"
#include "model.h"

#include <CLI/CLI.hpp>

#include <filesystem>
#include <fstream>
#include <iostream>

namespace fs = std::filesystem;

namespace {

// Exit codes, as `grade --help` documents them.
constexpr int exit_all_passed = 0;
constexpr int exit_some_failed = 1;
constexpr int exit_not_run = 3;  // no GPU: the checks could not run (nothing failed)
constexpr int exit_kit_fault = 4;

constexpr const char* exit_code_help =
    "Exit status: 0 every check ran and passed; 1 some check failed (a build error, a wrong\n"
    "answer, a crash or a hang); 2 bad command line; 3 the checks could not run (no CUDA\n"
    "device) and nothing failed; 4 a fault of the kit itself.";

int exit_status(const grade::Report& report) {
  bool not_run = false;
  for (const grade::LabResult& lab : report.labs) {
    if (lab.status == grade::LabStatus::kit_fault) return exit_kit_fault;
    if (lab.status == grade::LabStatus::not_run) {
      not_run = true;
      continue;
    }
    if (lab.status != grade::LabStatus::graded) return exit_some_failed;
    for (const grade::CaseResult& c : lab.cases)
      if (!c.passed) return exit_some_failed;
  }
  return not_run ? exit_not_run : exit_all_passed;
}

void write_file(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

void list_labs(const std::vector<grade::LabSpec>& labs) {
  for (const grade::LabSpec& lab : labs) {
    double points = lab.correctness_points;
    for (const auto& p : lab.performance) points += p.points;
    std::cout << lab.id << "  " << lab.name << "  " << lab.title << "  (" << points << " points; you edit: ";
    for (std::size_t i = 0; i < lab.student_files.size(); ++i)
      std::cout << (i ? ", " : "") << "labs/" << lab.dir << "/" << lab.student_files[i];
    std::cout << ")\n";
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Builds and grades the CUDA lab kit's labs on this machine's GPU."};
  app.footer(exit_code_help);
  bool solution = false, as_json = false, list = false, skip_performance = false;
  std::uint64_t seed = 0;
  std::vector<std::string> lab_keys;
  app.add_flag("--solution", solution, "grade the reference solutions instead of the student files");
  app.add_flag("--json", as_json, "print the report as JSON instead of text");
  app.add_flag("--list", list, "list the labs and exit");
  app.add_flag("--no-performance", skip_performance, "run the correctness cases only");
  app.add_option("--seed", seed, "change every case's inputs (same cases, new random data)");
  CLI::App* lab_command = app.add_subcommand("lab", "grade the labs named (number, name or folder)");
  lab_command->add_option("labs", lab_keys, "e.g. 01, histogram or 01-histogram")->required();
  CLI::App* all_command = app.add_subcommand("all", "grade every lab");
  // Flags may come before or after the subcommand: `grade lab 01 --solution` works too.
  lab_command->fallthrough();
  all_command->fallthrough();
  CLI11_PARSE(app, argc, argv);

  try {
    const grade::Toolchain toolchain = grade::configured_toolchain();
    const std::vector<grade::LabSpec> catalog = grade::load_catalog(toolchain.source_root);
    if (list || app.get_subcommands().empty()) {
      list_labs(catalog);
      if (!list) std::cout << "\nGrade one with `./grade lab 01`, all with `./grade all`; see --help.\n";
      return exit_all_passed;
    }
    std::vector<grade::LabSpec> chosen;
    if (lab_command->parsed())
      for (const std::string& key : lab_keys) chosen.push_back(grade::find_lab(catalog, key));
    else
      chosen = catalog;

    grade::Report report;
    report.who = solution ? "solution" : "student";
    report.mode = solution ? "reference solutions" : "student files";
    const std::string base = solution ? toolchain.source_root + "/solutions" : toolchain.source_root;
    grade::GradeOptions options{seed, !skip_performance,
                                (fs::path(toolchain.build_root) / "grade" / report.who).string()};
    for (const grade::LabSpec& lab : chosen) {
      std::cerr << "grade: lab " << lab.id << " " << lab.name << ": building and running its checks...\n";
      report.labs.push_back(grade::grade_lab(lab, grade::find_student_dir(lab, base), toolchain, options));
    }
    grade::add_totals(report);

    const fs::path reports = fs::path(toolchain.source_root) / "grading" / "reports";
    write_file(reports / (report.who + ".json"), grade::to_json(report).dump(2));
    write_file(reports / (report.who + ".md"), grade::to_markdown(report, true));
    if (as_json)
      std::cout << grade::to_json(report).dump(2) << "\n";
    else
      std::cout << grade::to_text(report, true) << "\nReports: " << (reports / report.who).string()
                << ".{json,md}\n";
    return exit_status(report);
  } catch (const std::exception& error) {
    std::cerr << "grade: the kit failed: " << error.what() << "\n";
    return exit_kit_fault;
  }
}
