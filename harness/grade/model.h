// The grader's one result model: every output (the terminal's text and each format of
// report/) is written from these structs.
#pragma once

#include "labkit/outcome.h"

#include <nlohmann/json.hpp>

#include <optional>
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

using labkit::protocol::Outcome;

struct CaseResult {
  std::string name;
  std::string kind;  // "correctness" or "performance"
  bool hidden = false;
  Outcome outcome = Outcome::not_run;  // not run: `message` says why; never counted as a failure
  std::string message;
  double points = 0;
  double max_points = 0;
  nlohmann::json timing;  // performance cases: the runner's record

  bool passed() const { return outcome == Outcome::passed; }
  bool ran() const { return outcome != Outcome::not_run; }
  bool failed() const { return labkit::protocol::is_failure(outcome); }
};

// One finding of compute-sanitizer, located in the student's source where the tool could say.
struct SanitizerFinding {
  std::string tool;     // "memcheck", "racecheck", "synccheck", "initcheck"
  std::string what;     // "write-after-read hazard on shared memory"
  std::string file;     // the student's file name ("histogram.cu"); empty when the tool gave none
  int line = 0;
  std::string also_at;  // the other access of a race or hazard ("histogram.cu:30")
  std::string kernel;
  std::string thread;   // "thread (3,0,0) in block (1,0,0)"
  std::string describe() const;  // "racecheck: write-after-read hazard on shared memory at histogram.cu:23"
};

// One tool's run over the lab's failing cases.
struct SanitizerRun {
  std::string tool;
  std::vector<std::string> cases;
  std::vector<SanitizerFinding> findings;  // the first few, in the student's code
  int errors_reported = 0;                 // the tool's own count (ERROR SUMMARY), all of them
  int kit_findings = 0;                    // located in the kit's files: left out, not the student's
  std::string tool_problem;  // the tool itself failed or timed out: never counted as the student's
};

struct LabResult {
  std::string id;     // "01"
  std::string name;   // "histogram"
  std::string title;
  LabStatus status = LabStatus::graded;
  std::string note;       // one line on what happened, for the reader
  std::string build_log;  // compiler output when the build failed
  bool build_kept = false;  // every module kept from an earlier build of the same inputs (not saved)
  std::string run_log;    // the tail of the runner's own output
  std::vector<CaseResult> cases;
  double points = 0;
  double max_points = 0;
  nlohmann::json device;
  std::vector<SanitizerRun> sanitizer;  // compute-sanitizer on failing cases; advisory, never scored
};

struct Report {
  std::string who;   // "starter", "solution", or a submission's folder name
  std::string mode;  // "student files" or "reference solutions"
  std::vector<LabResult> labs;
  double points = 0;
  double max_points = 0;
  // An instructor's secret (LABKIT_SECRET, --secret-file) changed every input: without one
  // the inputs follow the public seeds, and answers hard-coded from them would pass.
  bool secret_used = false;
};

// Why a lab was not graded, in one line for the gradebook and the console: the note its
// report gives (the file refused at intake, the crash, the missing GPU), or its status where
// the note points elsewhere (a build failure's "the compiler's messages are below"). Empty
// when the lab was graded.
std::string not_graded_reason(const LabResult& lab);

// A case's hint as a report shows it: a failing hidden case's details are withheld from
// students (show_hidden_details false), never from the instructor.
std::string visible_message(const CaseResult& c, bool show_hidden_details);

// Correctness cases of one lab that failed, or did not run, with the same hint, so that a
// report gives it once.
struct SharedHint {
  std::string hint;                // the first case's
  bool ran = true;                 // failed, or did not run
  std::vector<std::string> cases;  // three or more, in the lab's order
  bool numbers_differ = false;     // the cases' hints are the same but for their numbers
};
// Which hints count as the same: the very same text (the reports, which give each case's
// numbers in its row), or the same text but for its numbers and the values a comparison lists
// ("3 of 256 values differ: [17] expected 4, got 5; ..."): the console, where a race hint
// repeated with each case's counts would fill the screen.
enum class HintMatch { same_text, same_but_numbers };
std::vector<SharedHint> shared_hints(const LabResult& lab, bool show_hidden_details,
                                     HintMatch match = HintMatch::same_text);
// The hint with each number in it ("30 floats", "-1501", "2.5e-3") as "#": what hints that
// differ only in their numbers have in common. Digits inside a name ("float4", "f15") stay.
std::string without_numbers(const std::string& hint);

// "none of its 23 cases ran (100 points)" when no case of the lab ran (a build that failed, no
// GPU): the reports say so in one line instead of a table of cases all "not run" for the one
// reason the lab's note gives. "" when some case ran.
std::string none_ran(const LabResult& lab);

// What a case's own row says instead of a shared hint.
inline constexpr const char* see_shared_hint = "the same hint as other cases, below the table";
bool in_shared_hint(const std::vector<SharedHint>& shared, const std::string& case_name);
// "a, b, c (3 cases)"; a long list names the first few: "a, b, c, d, e and 14 more (19 cases)".
std::string case_list(const SharedHint& shared);

// The library's time for a timed case (CUB, cuBLAS), when the runner's record carries one as
// "anchor": {"name", "median_ms"}.
struct LibraryTime {
  std::string name;
  double median_ms = 0;
};
std::optional<LibraryTime> library_time(const CaseResult& c);

// A performance case's times in one line: "yours 0.0886 ms, 1184 GB/s, 39.3% of peak;
// reference 0.0373 ms; CUB 0.0455 ms; ratio 0.42" (a compute-bound case: "52.3 TFLOP/s,
// 77.3% of FP32 peak", labkit::protocol::throughput); empty when it was not timed.
std::string timing_line(const CaseResult& c);

// JSON as text for a file. Logs cut to their tail and folder names from a Latin-1 zip need not
// be valid UTF-8: invalid bytes become U+FFFD rather than an exception that loses the batch.
std::string json_text(const nlohmann::json& value, int indent = 2);

// snprintf for up to four numbers, at any length: what every report writer formats with.
std::string format(const char* pattern, double a, double b = 0, double c = 0, double d = 0);

void add_totals(LabResult& lab);
void add_totals(Report& report);

// ---- Points as every file gives them
//
// A lab's points are given once, to the hundredth, and every file (gradebook, Canvas,
// Gradescope, PrairieLearn, reports) shows that same figure: it is what its cases add up to
// when each case's share of the lab's maximum is taken in hundredths (the shares add up to the
// maximum exactly) and its points in hundredths of that share (full marks are the whole share).
// A platform that adds up the cases gets the lab's figure, to the hundredth.

// Whether the lab's points say anything of the student: not where this machine could not run
// it (no GPU, too few GPUs) or the kit failed. Every file leaves such a lab's points out (a
// blank cell, no score, "not judged"), never a 0.
bool judged_here(const LabResult& lab);

struct CaseShare {
  long long score = 0;  // hundredths of a point
  long long max = 0;
};
std::vector<CaseShare> case_shares(const LabResult& lab);  // one per case, in the lab's order
double lab_points(const LabResult& lab);                     // the lab's figure: its shares added up

// The figures of several labs added up; not judged when some lab was not judged here, as a
// total that leaves a lab out would read as a 0 for it.
struct Total {
  double points = 0;
  double max_points = 0;
  std::size_t labs_not_judged = 0;
  bool judged() const { return labs_not_judged == 0; }
};
Total total_of(const std::vector<const LabResult*>& labs);
Total total_of(const Report& report);

// "18.96", "73.4", "15": to the hundredth, without trailing zeros.
std::string points_figure(double points);
// "73.4 / 100 points", or "not judged here (100 points)".
std::string points_line(const LabResult& lab);
// "73.4 / 200 points", or what is known when some lab was not judged here.
std::string points_line(const Total& total);
// A case's share: "2.22 / 2.22".
std::string share_text(const CaseShare& share);

// What a lab's build log says of one of its `modules:` that did not compile ("mpi_allreduce.cu
// did not compile (its cases are not run; ...)"): the lab is graded without that part's cases,
// and the build error is the student's failure all the same.
inline constexpr const char* part_not_compiled = " did not compile (its cases are not run; the rest of the lab is graded)";
bool part_did_not_compile(const LabResult& lab);

// `grade`'s exit status (labkit/exit_status.h) after one report (`grade lab`, `grade all`):
// 1 when anything failed (a part of a lab that did not compile too, with or without a GPU),
// else 3 when some check could not run here, else 0; 4 on a kit fault.
int exit_status_of(const Report& report);
// A batch's (--submissions): every lab-submission graded is 0, whatever the students' scores;
// 3 when some could not run here (no GPU, too few GPUs); 4 when the kit failed on some.
int batch_exit_status(const std::vector<Report>& reports);

nlohmann::json to_json(const Report& report);
nlohmann::json to_json(const SanitizerRun& run);
SanitizerRun sanitizer_run_from_json(const nlohmann::json& run);
// Lines for a reader, one per finding or per tool that found nothing or failed.
std::vector<std::string> sanitizer_lines(const LabResult& lab);
// The cases the sanitizer ran on: "a, b, c".
std::string sanitizer_cases(const LabResult& lab);
nlohmann::json to_json(const LabResult& lab);
LabResult lab_from_json(const nlohmann::json& lab);  // the inverse of to_json

}  // namespace grade
