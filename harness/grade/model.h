// The grader's one result model: every output (terminal, JSON, Markdown, and the gradebook
// formats) is written from these structs.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace grade {

enum class LabStatus {
  graded,         // built, ran, every case reported
  build_failed,   // the student's files did not compile: diagnostics in build_log
  forbidden,      // uses a library the rubric forbids (it would do the lab's work)
  missing_files,  // a declared student file is absent
  run_failed,     // the runner crashed, hung or stopped early: unreported cases score 0
  not_run,        // no GPU here: nothing was judged
  kit_fault,      // the kit itself failed (reference wrong, dataset unreadable...)
};

std::string to_string(LabStatus status);

struct CaseResult {
  std::string name;
  std::string kind;  // "correctness" or "performance"
  bool hidden = false;
  bool ran = false;
  bool passed = false;
  std::string message;
  double points = 0;
  double max_points = 0;
  nlohmann::json timing;  // performance cases: the runner's record
};

struct LabResult {
  std::string id;     // "01"
  std::string name;   // "histogram"
  std::string title;
  LabStatus status = LabStatus::graded;
  std::string note;       // one line on what happened, for the reader
  std::string build_log;  // compiler output when the build failed
  std::string run_log;    // the tail of the runner's own output
  std::vector<CaseResult> cases;
  double points = 0;
  double max_points = 0;
  nlohmann::json device;
};

struct Report {
  std::string who;   // "starter", "solution", or a submission's folder name
  std::string mode;  // "student files" or "reference solutions"
  std::vector<LabResult> labs;
  double points = 0;
  double max_points = 0;
};

void add_totals(LabResult& lab);
void add_totals(Report& report);

nlohmann::json to_json(const Report& report);
nlohmann::json to_json(const LabResult& lab);
LabResult lab_from_json(const nlohmann::json& lab);  // the inverse of to_json
std::string to_text(const Report& report, bool show_hidden_details);
std::string to_markdown(const Report& report, bool show_hidden_details);

}  // namespace grade
