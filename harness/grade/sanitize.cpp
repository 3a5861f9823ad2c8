#include "sanitize.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <set>
#include <sstream>

namespace fs = std::filesystem;

namespace grade::sanitize {

namespace {

constexpr const char* prefix = "=========";

// One report of the tool: its first line and the indented lines that follow it.
struct Record {
  std::string header;
  std::vector<std::string> details;
};

bool starts_with(const std::string& text, const std::string& start) { return text.rfind(start, 0) == 0; }

// compute-sanitizer's lines start with "=========": one space before a report's first line,
// more before its details; an empty prefixed line ends a report. Other lines are the
// program's own output.
std::vector<Record> records(const std::string& text) {
  std::vector<Record> out;
  bool open = false;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!starts_with(line, prefix)) continue;
    const std::string rest = line.substr(std::string(prefix).size());
    const std::size_t spaces = rest.find_first_not_of(' ');
    if (spaces == std::string::npos) {
      open = false;
    } else if (spaces <= 1) {
      out.push_back({rest.substr(spaces), {}});
      open = true;
    } else if (open) {
      out.back().details.push_back(rest.substr(spaces));
    }
  }
  return out;
}

std::string without_severity(std::string header) {
  for (const char* severity : {"Error: ", "ERROR: ", "Warning: ", "WARN: ", "Warn: ", "(Warp Level Programming) "})
    if (starts_with(header, severity)) header = header.substr(std::string(severity).size());
  if (starts_with(header, "(Warp Level Programming) ")) header = header.substr(25);
  while (!header.empty() && (header.back() == ':' || header.back() == ' ')) header.pop_back();
  return header;
}

bool is_summary(const std::string& header) {
  for (const char* start : {"COMPUTE-SANITIZER", "ERROR SUMMARY", "RACECHECK SUMMARY", "LEAK SUMMARY",
                            "Saved host backtrace", "Target application returned an error"})
    if (starts_with(header, start)) return true;
  return false;
}

bool is_race_report(const std::string& header) {
  return header.find("Race reported") != std::string::npos || header.find("hazard detected") != std::string::npos;
}

// The tool's own trouble, as opposed to a finding: "Internal Sanitizer Error: ...", or an
// "Error: ..." that is not a racecheck report ("Error: Target application terminated before
// first instrumented API call").
bool is_tool_problem(const std::string& header) {
  if (header.find("Internal Sanitizer Error") != std::string::npos) return true;
  if (header.find("Sanitizer Error") != std::string::npos) return true;
  return (starts_with(header, "Error: ") || starts_with(header, "ERROR: ")) && !is_race_report(header);
}

// "ERROR SUMMARY: 3 errors", or racecheck's "RACECHECK SUMMARY: 20 hazards displayed (709632
// errors, 0 warnings)", where the count in brackets is all of them.
int summary_count(const std::string& header) {
  static const std::regex all_errors(R"(SUMMARY: .*\((\d+) errors?)");
  static const std::regex count(R"(SUMMARY: (\d+) (error|hazard))");
  std::smatch match;
  if (std::regex_search(header, match, all_errors)) return std::stoi(match[1]);
  return std::regex_search(header, match, count) ? std::stoi(match[1]) : -1;
}

struct Location {
  std::string file;  // as the tool printed it (the staged copy's full path)
  int line = 0;
  std::string rest;  // what follows "file:line" on its line
  std::string text;  // the whole line
};

std::vector<Location> locations(const Record& record) {
  static const std::regex source(
      R"(in (\S+?\.(?:cu|cuh|h|hpp|hh|cpp|cc|cxx|c|inl)):(\d+)(.*)$)");
  std::vector<Location> out;
  std::vector<std::string> lines = {record.header};
  lines.insert(lines.end(), record.details.begin(), record.details.end());
  for (const std::string& line : lines) {
    if (line.find("Host Frame") != std::string::npos) continue;
    std::smatch match;
    if (std::regex_search(line, match, source))
      out.push_back({match[1].str(), std::stoi(match[2].str()), match[3].str(), line});
  }
  return out;
}

std::string base_name(const std::string& path) { return fs::path(path).filename().string(); }

// "void (anonymous namespace)::tiled_kernel<32>(int, const float *)" → "tiled_kernel<32>".
std::string short_kernel(std::string name) {
  for (const char* noise : {"void ", "(anonymous namespace)::", "<unnamed>::"})
    for (std::size_t at; (at = name.find(noise)) != std::string::npos;) name.erase(at, std::string(noise).size());
  int depth = 0;
  for (std::size_t i = 0; i < name.size(); ++i) {
    if (name[i] == '<') ++depth;
    if (name[i] == '>') --depth;
    if (name[i] == '(' && depth == 0) return name.substr(0, i);
  }
  return name;
}

// Newer tools print "at kernel(args)+0x1c0 in file.cu:42", older "at 0x1c0 in file.cu:42:kernel(args)".
std::string kernel_of(const Location& where) {
  static const std::regex before(R"(at (.+)\+0x[0-9a-fA-F]+ in )");
  std::smatch match;
  if (std::regex_search(where.text, match, before)) return short_kernel(match[1].str());
  if (starts_with(where.rest, ":")) return short_kernel(where.rest.substr(1));
  return {};
}

std::string thread_of(const Record& record) {
  static const std::regex thread(R"(by thread \(([\d, ]+)\) in block \(([\d, ]+)\))");
  for (const std::string& line : record.details) {
    std::smatch match;
    if (std::regex_search(line, match, thread))
      return "thread (" + match[1].str() + ") in block (" + match[2].str() + ")";
  }
  return {};
}

// "... is 12 bytes after the nearest allocation at 0x7f00 of size 4096 bytes" → " (12 bytes
// past the end of a buffer)". Not the size: the kit's buffers are mappings rounded up to 2 MiB
// (the student's array sits at the end of one), so the size says nothing about the array.
std::string bounds_note(const Record& record) {
  static const std::regex nearest(R"((\d+) bytes (after|before) the nearest allocation)");
  for (const std::string& line : record.details) {
    std::smatch match;
    if (std::regex_search(line, match, nearest)) {
      const std::string distance = match[1].str() + (match[1].str() == "1" ? " byte " : " bytes ");
      return " (" + distance + (match[2].str() == "after" ? "past the end of a buffer)" : "before a buffer)");
    }
  }
  return {};
}

std::string hazard_name(const std::string& code) {
  if (code == "RAW") return "read-after-write";
  if (code == "WAR") return "write-after-read";
  if (code == "WAW") return "write-after-write";
  return code;
}

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return text;
}

// What a report says happened, in the words of a finding line: the same words for every report
// of one kind (which thread or address aside).
std::string kind_of(const Record& record) {
  const std::string header = without_severity(record.header);
  static const std::regex hazard(R"(Potential (RAW|WAR|WAW) hazard detected at __(shared|global)__)");
  static const std::regex race(R"(Race reported between (\w+) access)");
  static const std::regex other_access(R"(and (\w+) access)");
  std::smatch match;
  if (std::regex_search(header, match, hazard))
    return hazard_name(match[1].str()) + " hazard on " + match[2].str() + " memory";
  if (std::regex_search(header, match, race)) {
    std::string second;
    for (const std::string& line : record.details)
      if (std::smatch other; std::regex_search(line, other, other_access)) second = lower(other[1].str());
    const std::string first = lower(match[1].str());
    return "race on shared memory between a " + first + (second.empty() ? "" : " and a " + second);
  }
  return header;
}

bool is_student_file(const std::string& path, const std::vector<std::string>& student_files) {
  return std::find(student_files.begin(), student_files.end(), base_name(path)) != student_files.end();
}

}  // namespace

double slowdown(const std::string& tool) {
  // racecheck instruments every shared-memory access; the others mostly global ones.
  return tool == "racecheck" ? 50 : 20;
}

std::vector<std::string> command(const std::string& sanitizer, const std::string& tool,
                                 const std::string& log_pattern) {
  std::vector<std::string> argv = {sanitizer, "--tool", tool,
                                   "--log-file", log_pattern,
                                   "--print-limit", "20",          // a few are read; thousands cost time
                                   "--show-backtrace", "no",       // the kernel's line is what a student needs
                                   "--check-exit-code", "no",      // the grader stops the host: not a finding
                                   "--launch-timeout", "60"};      // the host loads CUDA before it connects
  if (tool == "racecheck") argv.insert(argv.end(), {"--racecheck-report", "hazard"});  // RAW, WAR, WAW
  return argv;
}

std::string find_tool(const std::string& name, const std::string& nvcc) {
  std::vector<fs::path> folders;
  if (const char* path = std::getenv("PATH")) {
    std::istringstream parts(path);
    for (std::string folder; std::getline(parts, folder, ':');)
      if (!folder.empty()) folders.emplace_back(folder);
  }
  if (!nvcc.empty()) folders.push_back(fs::path(nvcc).parent_path());
  folders.emplace_back("/usr/local/cuda/bin");
  for (const fs::path& folder : folders) {
    const fs::path candidate = folder / name;
    if (::access(candidate.c_str(), X_OK) == 0 && !fs::is_directory(candidate)) return fs::absolute(candidate).string();
  }
  return {};
}

Parsed parse(const std::string& tool, const std::string& text, const std::vector<std::string>& student_files,
             std::size_t limit) {
  Parsed parsed;
  std::set<std::string> seen;
  std::vector<SanitizerFinding> unlocated;
  int records_seen = 0;
  for (const Record& record : records(text)) {
    if (const int count = summary_count(record.header); count >= 0)
      parsed.errors_reported = std::max(parsed.errors_reported, count);  // racecheck prints two summaries
    if (is_summary(record.header)) continue;
    if (is_tool_problem(record.header)) {
      if (parsed.tool_problem.empty()) parsed.tool_problem = without_severity(record.header);
      continue;
    }
    ++records_seen;
    const std::string kind = kind_of(record);
    SanitizerFinding finding{tool, kind + bounds_note(record)};
    const std::vector<Location> where = locations(record);
    if (where.empty()) {
      if (unlocated.empty()) unlocated.push_back(finding);
      continue;
    }
    const auto mine = std::find_if(where.begin(), where.end(),
                                   [&](const Location& l) { return is_student_file(l.file, student_files); });
    if (mine == where.end()) {
      ++parsed.kit_findings;
      continue;
    }
    finding.file = base_name(mine->file);
    finding.line = mine->line;
    finding.kernel = kernel_of(*mine);
    finding.thread = thread_of(record);
    for (const Location& other : where)
      if (&other != &*mine && (base_name(other.file) != finding.file || other.line != finding.line)) {
        finding.also_at = base_name(other.file) + ":" + std::to_string(other.line);
        break;
      }
    // One kind of report at one line is one finding, however many threads or addresses hit it.
    const std::string key = kind + "@" + finding.file + ":" + std::to_string(finding.line);
    if (!seen.insert(key).second || parsed.findings.size() >= limit) continue;
    parsed.findings.push_back(finding);
  }
  if (parsed.findings.empty() && !unlocated.empty()) parsed.findings.push_back(unlocated.front());
  parsed.errors_reported = std::max(parsed.errors_reported, records_seen);
  return parsed;
}

}  // namespace grade::sanitize
