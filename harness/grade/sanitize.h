// compute-sanitizer in grading: the command line that wraps a submission's host process, and
// the reading of the tool's text output into findings at the student's source lines (the
// kit compiles every submission with -lineinfo, so the tool can name them).
#pragma once

#include "model.h"

#include <string>
#include <vector>

namespace grade::sanitize {

// The tools a lab may ask for in lab.yaml (`sanitize: [memcheck, racecheck]`). Inline, so that
// the catalog compiles on its own (labs/meson.build builds it while it configures).
inline const std::vector<std::string>& known_tools() {
  static const std::vector<std::string> tools = {"memcheck", "racecheck", "synccheck", "initcheck"};
  return tools;
}

// How much slower a call runs under each tool: the call limit grows by this much.
double slowdown(const std::string& tool);

// compute-sanitizer's options for `tool`, before the host's own command line. Each host the
// runner starts logs to log_pattern with "{start}" replaced by the start's ordinal.
std::vector<std::string> command(const std::string& sanitizer, const std::string& tool,
                                 const std::string& log_pattern);

// An executable named `name`: on PATH, else beside nvcc, else in /usr/local/cuda/bin. Empty
// when none is found.
std::string find_tool(const std::string& name, const std::string& nvcc);

struct Parsed {
  std::vector<SanitizerFinding> findings;  // the first `limit`, in the student's files
  int errors_reported = 0;                 // the tool's ERROR SUMMARY (or the records seen)
  int kit_findings = 0;                    // located in files that are not the student's
  std::string tool_problem;                // the tool's own failure, when it reported one
};

// Reads compute-sanitizer's text output (its --log-file). Findings located in a file that is
// not one of `student_files` are counted in kit_findings and left out; a finding with no
// source location (an API error) is kept only when nothing located was found. Repeats of
// one kind at one line are reported once.
Parsed parse(const std::string& tool, const std::string& text, const std::vector<std::string>& student_files,
             std::size_t limit = 3);

}  // namespace grade::sanitize
