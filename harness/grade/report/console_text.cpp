#include "report/console_text.h"

#include "report/batch_rows.h"
#include "unicode.h"

#include <algorithm>
#include <sstream>

namespace grade {

namespace {

std::size_t count_passed(const LabResult& lab, const char* kind, std::size_t& total) {
  std::size_t passed = 0;
  total = 0;
  for (const CaseResult& c : lab.cases)
    if (c.kind == kind) ++total, passed += c.passed();
  return passed;
}

void lab_heading(std::ostringstream& out, const LabResult& lab) {
  out << "\nLab " << lab.id << " " << lab.name << ": " << lab.title << "\n";
  if (lab.device.contains("name"))
    out << "  GPU: " << lab.device["name"].get<std::string>() << " (compute capability "
        << lab.device["compute_capability"].get<std::string>() << ")\n";
  if (!lab.note.empty()) out << "  " << lab.note << "\n";
  if (!lab.build_log.empty()) {
    std::istringstream log(lab.build_log);
    for (std::string line; std::getline(log, line);) out << "    | " << line << "\n";
  }
}

// Cases that failed or did not run, each with its hint; hints that differ only in their
// numbers once, as a race's counts repeated per case would fill the screen.
void correctness_lines(std::ostringstream& out, const LabResult& lab, bool show_hidden_details) {
  const std::vector<SharedHint> shared = shared_hints(lab, show_hidden_details, HintMatch::same_but_numbers);
  for (const CaseResult& c : lab.cases) {
    if (c.kind != "correctness" || c.passed() || in_shared_hint(shared, c.name)) continue;
    out << "    " << (c.ran() ? "FAIL " : "NOT RUN ") << c.name << ": " << visible_message(c, show_hidden_details)
        << "\n";
  }
  for (const SharedHint& s : shared)
    out << "    " << (s.ran ? "FAIL " : "NOT RUN ") << case_list(s)
        << (s.numbers_differ ? ", the same hint but for its numbers (each case's are in the reports), as "
                                   + s.cases.front() + " gave it: "
                             : ", the same hint: ")
        << s.hint << "\n";
}

void performance_lines(std::ostringstream& out, const LabResult& lab) {
  out << "  performance:\n";
  const std::vector<CaseShare> shares = case_shares(lab);
  for (std::size_t i = 0; i < lab.cases.size(); ++i) {
    const CaseResult& c = lab.cases[i];
    if (c.kind != "performance") continue;
    out << "    " << c.name << ": ";
    const std::string timing = timing_line(c);
    out << (timing.empty() ? "" : timing + "; ") << (c.message.empty() ? "" : c.message + "; ")
        << share_text(shares[i]) << " points\n";
  }
}

void lab_text(std::ostringstream& out, const LabResult& lab, bool show_hidden_details) {
  lab_heading(out, lab);
  std::size_t total = 0;
  const std::size_t passed = count_passed(lab, "correctness", total);
  const bool judged = lab.status == LabStatus::graded || lab.status == LabStatus::run_failed;
  if (!judged) {
    std::size_t timed = 0;
    count_passed(lab, "performance", timed);
    out << "  " << total << " correctness and " << timed << " performance cases not run\n";
    out << "  lab total: " << points_line(lab) << "\n";
    return;
  }
  out << "  correctness: " << passed << " of " << total << " cases passed\n";
  correctness_lines(out, lab, show_hidden_details);
  if (!lab.sanitizer.empty()) {
    out << "  compute-sanitizer, on " << sanitizer_cases(lab) << " (your lines, the first findings):\n";
    for (const std::string& line : sanitizer_lines(lab)) out << "    " << line << "\n";
  }
  performance_lines(out, lab);
  out << "  lab total: " << points_line(lab) << "\n";
}

// Columns a name takes in a terminal: wide East Asian characters take two, accents none.
std::size_t display_width(const std::string& text) {
  std::size_t width = 0;
  for (std::size_t at = 0; at < text.size();) {
    const auto [code, length] = decode_utf8(text, at);
    at += length;
    const bool wide = (code >= 0x1100 && code <= 0x115F) || (code >= 0x2E80 && code <= 0xA4CF) ||
                      (code >= 0xAC00 && code <= 0xD7A3) || (code >= 0xF900 && code <= 0xFAFF) ||
                      (code >= 0xFE30 && code <= 0xFE4F) || (code >= 0xFF00 && code <= 0xFF60) ||
                      (code >= 0xFFE0 && code <= 0xFFE6) || (code >= 0x1F300 && code <= 0x1FAFF) ||
                      (code >= 0x20000 && code <= 0x3FFFD);
    width += combining_mark(code) ? 0 : wide ? 2 : 1;
  }
  return width;
}

// A name as one line of the console: a line break or tab in a folder's name would break the columns.
std::string one_line(std::string text) {
  for (char& c : text)
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  return text;
}

}  // namespace

std::string to_text(const Report& report, bool show_hidden_details) {
  std::ostringstream out;
  out << "Grading " << report.who << " (" << report.mode << ")\n";
  for (const LabResult& lab : report.labs) lab_text(out, lab, show_hidden_details);
  out << "\nTotal: " << points_line(total_of(report)) << "\n";
  return out.str();
}

std::string batch_summary(const std::vector<Report>& reports, const std::vector<LabSpec>& labs) {
  constexpr std::size_t min_width = 12, max_width = 40;  // a longer name pushes its own line's columns only
  constexpr std::size_t points_width = 6;
  std::size_t width = min_width;
  for (const Report& report : reports) width = std::max(width, std::min(max_width, display_width(one_line(report.who))));
  std::string summary;
  for (const Report& report : reports) {
    const std::string name = one_line(report.who);
    const Total total = total_of(asked_labs(report, labs));
    // No total where a lab was not judged: the lines below say which and why.
    const std::string points = total.judged() ? points_figure(total.points) : "-";
    summary += name + std::string(width - std::min(width, display_width(name)), ' ') + "  " +
               std::string(points_width - std::min(points_width, points.size()), ' ') + points + " / " +
               points_figure(total.max_points) + "\n";
    for (const LabsWithReason& labs_with : not_graded_reasons(report, labs))
      summary += std::string("    lab") + (labs_with.ids.size() > 1 ? "s " : " ") + labs_named(labs_with) + ": " +
                 one_line(labs_with.reason) + "\n";
  }
  return summary;
}

}  // namespace grade
