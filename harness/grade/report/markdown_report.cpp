#include "report/markdown_report.h"

#include <sstream>

namespace grade {

namespace {

// A Markdown table cell holds one line and no column separator.
std::string table_cell(std::string text) {
  for (char& c : text)
    if (c == '|' || c == '\n') c = ' ';
  return text;
}

std::string case_details(const CaseResult& c, const std::vector<SharedHint>& shared, bool show_hidden_details) {
  std::string details = c.kind == "performance"            ? timing_line(c)
                        : in_shared_hint(shared, c.name) ? see_shared_hint
                                                         : visible_message(c, show_hidden_details);
  if (c.kind == "performance" && !c.message.empty()) details += (details.empty() ? "" : "; ") + c.message;
  return details;
}

void case_table(std::ostringstream& out, const LabResult& lab, const std::vector<SharedHint>& shared,
                bool show_hidden_details) {
  out << "\n| case | kind | result | points | details |\n|---|---|---|---|---|\n";
  const std::vector<CaseShare> shares = case_shares(lab);
  for (std::size_t i = 0; i < lab.cases.size(); ++i) {
    const CaseResult& c = lab.cases[i];
    out << "| " << c.name << (c.hidden ? " (hidden)" : "") << " | " << c.kind << " | "
        << (c.passed() ? "pass" : c.ran() ? "fail" : "not run") << " | " << share_text(shares[i]) << " | "
        << table_cell(case_details(c, shared, show_hidden_details)) << " |\n";
  }
}

void lab_section(std::ostringstream& out, const LabResult& lab, bool show_hidden_details) {
  if (lab.status == LabStatus::missing_files) {  // nothing was judged: a table of zeros says nothing more
    out << "\n**Lab " << lab.id << " " << lab.name << ": " << lab.title << "**: " << to_string(lab.status) << ", "
        << points_line(lab) << ": " << lab.note << "\n";
    return;
  }
  out << "\n## Lab " << lab.id << " " << lab.name << ": " << lab.title << "\n\n"
      << "Status: " << to_string(lab.status) << ". Points: " << points_line(lab) << ".\n";
  if (!lab.note.empty()) out << "\n" << lab.note << "\n";
  if (!lab.build_log.empty()) out << "\n```\n" << lab.build_log << "\n```\n";
  if (const std::string none = none_ran(lab); !none.empty()) {
    out << "\nThe lab's checks did not run: " << none << ".\n";
    return;
  }
  const std::vector<SharedHint> shared = shared_hints(lab, show_hidden_details);
  case_table(out, lab, shared, show_hidden_details);
  if (!shared.empty()) out << "\n";
  for (const SharedHint& s : shared) out << "- The same hint for cases " << case_list(s) << ": " << s.hint << "\n";
  if (!lab.sanitizer.empty()) {
    out << "\n**compute-sanitizer**, on " << sanitizer_cases(lab) << ":\n\n";
    for (const std::string& line : sanitizer_lines(lab)) out << "- `" << line << "`\n";
  }
}

}  // namespace

std::string to_markdown(const Report& report, bool show_hidden_details) {
  std::ostringstream out;
  out << "# Grade report: " << report.who << "\n\n" << "Mode: " << report.mode << ". "
      << "Total: **" << points_line(total_of(report)) << "**.\n";
  for (const LabResult& lab : report.labs) lab_section(out, lab, show_hidden_details);
  return out.str();
}

void MarkdownReportWriter::write_run(const RunOutput& run) {
  write_file((run.dir / run.report.who).string() + ".md", to_markdown(run.report, true));
}

void MarkdownReportWriter::write_batch(const BatchOutput& batch) {
  for (std::size_t i = 0; i < batch.reports.size(); ++i)
    write_file(batch.dir / "students" / (batch.file_names[i] + ".md"), to_markdown(batch.reports[i], false));
}

}  // namespace grade
