// Every file a grading run writes comes from a ReportWriter: one class per format, each in a
// file of its own in this folder, all of them listed once in every_report_writer() (in
// report_writer.cpp). The grader hands the writers what it graded and the folder the files go
// to; each writer decides its files' names and bytes, and names what a batch gets from it
// (batch_files(), which the console lists). Adding a format is its file, a line in that list
// and its name in harness/grade/meson.build.
#pragma once

#include "catalog.h"
#include "model.h"
#include "roster.h"

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace grade {

// One run's report for the one who ran it (`grade lab`, `grade all`): dir/WHO.* with every
// detail shown, hidden cases' too.
struct RunOutput {
  const Report& report;
  const std::vector<LabSpec>& labs;  // the labs asked for
  std::filesystem::path dir;
};

// A class's batch (--submissions): files for the instructor, for course platforms and to hand
// back, each holding only the labs asked for.
struct BatchOutput {
  const std::vector<Report>& reports;
  const std::vector<LabSpec>& labs;
  const Roster& roster;
  std::vector<std::string> file_names;  // each report's students' files' name (file_names.h)
  std::filesystem::path dir;
};

// A file or folder that a writer puts in a batch's folder, as the console names it once the
// batch is done ("junit.xml", "gradescope/LAB/": LAB and WHO stand for each lab and student),
// and whom it is for.
struct BatchFile {
  enum class For { gradebook, students, platforms, instructor };
  std::string name;
  For audience = For::instructor;
};

class ReportWriter {
 public:
  virtual ~ReportWriter() = default;
  // A format with nothing to say for a run or a batch leaves the hook as it is.
  virtual void write_run(const RunOutput&) {}
  virtual void write_batch(const BatchOutput&) {}
  // What write_batch writes: every file or folder it puts in the batch's folder.
  virtual std::vector<BatchFile> batch_files() const { return {}; }
};

// Writers side by side: each is given the same reports, in the order they were added.
class ReportWriters final : public ReportWriter {
 public:
  template <typename Writer>
  void add() {
    writers_.push_back(std::make_unique<Writer>());
  }
  void write_run(const RunOutput& run) override;
  void write_batch(const BatchOutput& batch) override;
  std::vector<BatchFile> batch_files() const override;  // each name once, in the writers' order

 private:
  std::vector<std::unique_ptr<ReportWriter>> writers_;
};

// Every format the grader writes.
ReportWriters every_report_writer();

// The console's line after a batch written to `dir`: the gradebook's path, then what every
// writer's batch_files() names, by whom it is for.
std::string batch_files_line(const std::filesystem::path& dir);

// A file's text, its folder made first.
void write_file(const std::filesystem::path& path, const std::string& text);

// One run's reports, every format's: dir/WHO.{json,md,html}.
void write_run_reports(const Report& report, const std::vector<LabSpec>& labs, const std::string& dir);

// A batch's files under out_dir, every format's: gradebook.csv, junit.xml, canvas-import.csv;
// per lab gradescope-scores/LAB.csv; per student students/WHO.{json,md} and handout/WHO.html
// (no hidden case's details: ready to hand back); per lab and student
// gradescope/LAB/WHO/results.json (where the lab was judged here) and
// prairielearn/LAB/WHO/results.json. LAB is the lab's folder, "01-histogram"; WHO the
// report's file name (file_names.h).
void write_batch_outputs(const std::vector<Report>& reports, const std::vector<LabSpec>& labs,
                         const std::string& out_dir, const Roster& roster = {});

}  // namespace grade
