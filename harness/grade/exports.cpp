#include "exports.h"

#include "intake.h"
#include "report_html.h"
#include "text.h"
#include "unicode.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <set>
#include <sstream>
#include <string_view>

namespace fs = std::filesystem;
using nlohmann::json;

namespace grade {

// RFC 4180: a field holding a comma, a quote or a line break is quoted, its quotes doubled.
std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

std::string csv_row(const std::vector<std::string>& fields) {
  std::string row;
  for (std::size_t i = 0; i < fields.size(); ++i) row += (i ? "," : "") + csv_field(fields[i]);
  return row + "\n";
}

namespace {

// ---- Text and files

// XML 1.0 takes no control characters but tab and newline; the markup escapes are HTML's.
std::string xml_escaped(const std::string& text) {
  std::string printable = text;
  for (char& c : printable)
    if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t') c = ' ';
  return html_escaped(printable);
}

void write_text(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

bool continuation_byte(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

// A compiler's messages for a platform's page: the first errors matter, the thousandth does
// not. Cut at a line end, or else never inside a character.
std::string cut_log(const std::string& log) {
  constexpr std::size_t max_bytes = 8000;
  if (log.size() <= max_bytes) return log;
  std::size_t cut = log.rfind('\n', max_bytes);
  if (cut == std::string::npos || cut < max_bytes / 2) {
    cut = max_bytes;
    while (cut > 0 && continuation_byte(log[cut])) --cut;
  }
  return log.substr(0, cut) + "\n[... " + std::to_string(log.size() - cut) +
         " more bytes of the compiler's messages: the whole log is in your report]";
}

// ---- The labs asked for, and what became of them

const LabResult* asked_lab(const Report& report, const LabSpec& spec) {
  for (const LabResult& lab : report.labs)
    if (lab.id == spec.id) return &lab;
  return nullptr;
}

// A report's labs in the order asked; a lab asked for that the report lacks is left out.
std::vector<const LabResult*> asked_labs(const Report& report, const std::vector<LabSpec>& labs) {
  std::vector<const LabResult*> asked;
  for (const LabSpec& spec : labs)
    if (const LabResult* lab = asked_lab(report, spec)) asked.push_back(lab);
  return asked;
}

// The lab as a platform's score cell: blank where it was not judged here, so that an import
// leaves the platform's grade as it was.
std::string score_cell(const LabResult* lab) {
  return lab && judged_here(*lab) ? points_figure(lab_points(*lab)) : "";
}

// A total as a cell: blank unless every lab in it was judged here.
std::string total_cell(const Total& total) { return total.judged() ? points_figure(total.points) : ""; }

std::string lab_column(const LabSpec& spec) { return "Lab " + spec.id + " " + spec.name; }

// Labs not graded for the same reason go together: a submission that is a file is one note.
struct LabsWithReason {
  std::vector<std::string> ids;
  std::string reason;
};

// A lab not handed in says so in three words: in a class's batch there are many, each naming
// its own file. Any other lab not graded gives its report's reason.
std::string reason_in_gradebook(const LabResult& lab, const LabSpec& spec) {
  if (not_handed_in(lab, spec)) return "not handed in";
  return not_graded_reason(lab);
}

std::vector<LabsWithReason> not_graded_reasons(const Report& report, const std::vector<LabSpec>& labs) {
  std::vector<LabsWithReason> reasons;
  for (const LabSpec& spec : labs) {
    const LabResult* lab = asked_lab(report, spec);
    const std::string reason = lab ? reason_in_gradebook(*lab, spec) : "";
    if (reason.empty()) continue;
    const auto same = std::find_if(reasons.begin(), reasons.end(), [&](const auto& r) { return r.reason == reason; });
    if (same == reasons.end())
      reasons.push_back({{lab->id}, reason});
    else
      same->ids.push_back(lab->id);
  }
  return reasons;
}

// "01, 03, 05-13".
std::string labs_named(const LabsWithReason& labs) { return id_ranges(labs.ids); }

// ---- What the platforms show

// A case's name on a platform's page: its kind first, as a correctness and a timed case may
// share a name ("uniform-100MiB"), and the platforms list tests by name.
std::string test_name(const CaseResult& c) { return c.kind + ": " + c.name; }

// A case's details as a student may see them: the hint, or the timing and its note.
std::string case_output(const CaseResult& c) {
  if (c.kind != "performance" || (c.hidden && !c.passed())) return visible_message(c, false);
  std::string output = timing_line(c);
  if (!c.message.empty()) output += (output.empty() ? "" : "; ") + c.message;
  return output;
}

// The lab's points and note, then the compiler's messages when there are any.
std::string lab_output(const LabResult& lab) {
  std::string output = "Lab " + lab.id + " " + lab.name + ": " + points_line(lab) +
                       (lab.note.empty() ? "" : "; " + lab.note) + "\n";
  if (!lab.build_log.empty()) output += cut_log(lab.build_log) + "\n";
  return output;
}

// ---- Safe file names

// Latin letters with accents, U+00C0 to U+017F, by their base letter; '-' for × and ÷.
constexpr std::string_view latin_1_letters = "AAAAAAACEEEEIIIIDNOOOOO-OUUUUYTsaaaaaaaceeeeiiiidnooooo-ouuuuyty";
constexpr std::string_view latin_extended_a_letters =
    "AaAaAaCcCcCcCcDdDdEeEeEeEeEeGgGgGgGgHhHhIiIiIiIiIiIiJjKkkLlLlLlLlLlNnNnNnnNnOoOoOoOoRrRrRrSsSsSsSsTtTtTtUuUuUuUuUuUuWwYyYZzZzZzs";
static_assert(latin_1_letters.size() == 0x100 - 0xC0, "a letter for each code point from U+00C0 to U+00FF");
static_assert(latin_extended_a_letters.size() == 0x180 - 0x100, "a letter for each code point from U+0100 to U+017F");

// The ASCII letter a code point reads as in a file name, or '-' to separate words.
char file_name_letter(char32_t code) {
  if (code < 0x80 && (std::isalnum(int(code)) || code == '.' || code == '_' || code == '-')) return char(code);
  if (code >= 0xC0 && code <= 0xFF) return latin_1_letters[code - 0xC0];
  if (code >= 0x100 && code <= 0x17F) return latin_extended_a_letters[code - 0x100];
  return '-';
}

std::string slug(const std::string& who) {
  constexpr std::size_t max_length = 80;
  std::string name;
  for (std::size_t at = 0; at < who.size();) {
    const auto [code, length] = decode_utf8(who, at);
    at += length;
    if (combining_mark(code)) continue;
    const char letter = file_name_letter(code);
    if (letter != '-' || (!name.empty() && name.back() != '-')) name += letter;
  }
  const auto first = name.find_first_not_of(".-");
  name = first == std::string::npos ? "" : name.substr(first, std::min(max_length, name.size() - first));
  while (!name.empty() && (name.back() == '-' || name.back() == '.')) name.pop_back();
  return name.empty() ? "student" : name;
}

std::string lower(std::string text) {
  for (char& c : text) c = char(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

// ---- The console

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

std::string gradebook_csv(const std::vector<Report>& reports, const std::vector<LabSpec>& labs, const Roster& roster) {
  std::vector<std::string> header = {"student"};
  if (!roster.empty()) header.insert(header.end(), {"student_id", "name", "email"});
  for (const LabSpec& lab : labs) header.push_back("lab" + lab.id + "-" + lab.name);
  header.insert(header.end(), {"total", "max", "secret", "notes"});
  std::string csv = csv_row(header);
  for (const Report& report : reports) {
    std::vector<std::string> row = {report.who};
    if (!roster.empty()) {
      const Student student = student_of(roster, report.who);
      row.insert(row.end(), {student.student_id, student.name, student.email});
    }
    for (const LabSpec& spec : labs) row.push_back(score_cell(asked_lab(report, spec)));
    std::string notes;
    for (const LabsWithReason& labs_with : not_graded_reasons(report, labs))
      notes += (notes.empty() ? "" : "; ") + labs_named(labs_with) + ": " + labs_with.reason;
    const Total total = total_of(asked_labs(report, labs));
    row.insert(row.end(),
               {total_cell(total), points_figure(total.max_points), report.secret_used ? "yes" : "no", notes});
    csv += csv_row(row);
  }
  return csv;
}

std::string junit_xml(const std::vector<Report>& reports, const std::vector<LabSpec>& labs) {
  std::ostringstream out;
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n";
  for (const Report& report : reports) {
    for (const LabResult* lab : asked_labs(report, labs)) {
      const std::string reason = not_graded_reason(*lab);
      const bool lab_failed = !reason.empty() && judged_here(*lab);
      std::size_t failures = lab_failed, skipped = !judged_here(*lab);
      for (const CaseResult& c : lab->cases) failures += c.ran() && !c.passed(), skipped += !c.ran();
      const std::string classname = xml_escaped(report.who + "." + lab->id + "-" + lab->name);
      out << "  <testsuite name=\"" << xml_escaped(report.who + " lab " + lab->id + " " + lab->name) << "\" tests=\""
          << lab->cases.size() + 1 << "\" failures=\"" << failures << "\" skipped=\"" << skipped << "\">\n";
      // The lab as a whole: built, ran and reported, or why not, once rather than on every
      // case; a build's messages are the failure's text.
      out << "    <testcase classname=\"" << classname << "\" name=\"lab graded\">";
      if (!judged_here(*lab))
        out << "<skipped message=\"" << xml_escaped(reason) << "\"/>";
      else if (lab_failed)
        out << "<failure message=\"" << xml_escaped(reason) << "\">" << xml_escaped(lab->build_log) << "</failure>";
      out << "</testcase>\n";
      for (const CaseResult& c : lab->cases) {
        out << "    <testcase classname=\"" << classname << "." << xml_escaped(c.kind) << "\" name=\""
            << xml_escaped(c.name) << "\">";
        // A case of a lab not graded says so in the lab's words: its own message may point
        // at text (the compiler's messages) that only the report has.
        const std::string message = xml_escaped(!reason.empty() && !c.ran() ? "the lab was not graded: " + reason
                                                : c.message.empty()          ? reason
                                                                             : c.message);
        if (!c.ran())
          out << "<skipped message=\"" << message << "\"/>";
        else if (!c.passed())
          out << "<failure message=\"" << message << "\"/>";
        out << "</testcase>\n";
      }
      out << "  </testsuite>\n";
    }
  }
  out << "</testsuites>\n";
  return out.str();
}

std::optional<json> gradescope_results(const Report& report, const LabSpec& spec) {
  const LabResult* lab = asked_lab(report, spec);
  if (!lab || !judged_here(*lab)) return std::nullopt;
  const std::vector<CaseShare> shares = case_shares(*lab);
  json tests = json::array();
  for (std::size_t i = 0; i < lab->cases.size(); ++i) {
    const CaseResult& c = lab->cases[i];
    json test = {{"name", test_name(c)},
                 {"score", double(shares[i].score) / 100},
                 {"max_score", double(shares[i].max) / 100},
                 {"output", case_output(c)},
                 {"visibility", c.hidden ? "hidden" : "visible"}};
    // Gradescope knows only passed and failed: a case that did not run is neither, and its
    // output says why.
    if (c.ran()) test["status"] = c.passed() ? "passed" : "failed";
    tests.push_back(test);
  }
  return json{{"score", lab_points(*lab)}, {"output", lab_output(*lab)}, {"visibility", "visible"}, {"tests", tests}};
}

json prairielearn_results(const Report& report, const LabSpec& spec) {
  const LabResult* lab = asked_lab(report, spec);
  if (!lab || !judged_here(*lab))
    return {{"gradable", false},
            {"message", "not judged here (no GPU, too few GPUs, or a fault of the kit): not graded"},
            {"output", lab ? lab_output(*lab) : ""},
            {"tests", json::array()}};
  const std::vector<CaseShare> shares = case_shares(*lab);
  json tests = json::array();
  for (std::size_t i = 0; i < lab->cases.size(); ++i) {
    const CaseResult& c = lab->cases[i];
    tests.push_back({{"name", test_name(c)},
                     {"description", lab->title + ": a " + c.kind + " case" + (c.hidden ? " (hidden)" : "")},
                     {"points", double(shares[i].score) / 100},
                     {"max_points", double(shares[i].max) / 100},
                     {"message", c.passed() ? "passed" : c.ran() ? "failed" : "not run"},
                     {"output", case_output(c)}});
  }
  const double max = lab->max_points;
  return {{"gradable", true},
          {"score", max > 0 ? std::clamp(lab_points(*lab) / max, 0.0, 1.0) : 0.0},
          {"message", points_line(*lab)},
          {"output", lab_output(*lab)},
          {"tests", tests}};
}

std::string canvas_csv(const std::vector<Report>& reports, const std::vector<LabSpec>& labs, const Roster& roster) {
  std::vector<std::string> header = {"Student", "ID", "SIS User ID", "SIS Login ID", "Section"};
  std::vector<std::string> points_possible = {"Points Possible", "", "", "", ""};
  for (const LabSpec& spec : labs) {
    header.push_back(lab_column(spec));
    points_possible.push_back(points_figure(max_points(spec)));
  }
  std::string csv = csv_row(header) + csv_row(points_possible);
  for (const Report& report : reports) {
    const Student student = student_of(roster, report.who);
    // Canvas matches a row on its ID, then the SIS ids; the name is for the reader.
    std::vector<std::string> row = {student.name.empty() ? report.who : student.name, "", student.student_id,
                                    student.email, ""};
    for (const LabSpec& spec : labs) row.push_back(score_cell(asked_lab(report, spec)));
    csv += csv_row(row);
  }
  return csv;
}

std::string gradescope_scores_csv(const std::vector<Report>& reports, const LabSpec& lab, const Roster& roster) {
  std::string csv = csv_row({"Name", "SID", "Email", "Total Score"});
  for (const Report& report : reports) {
    const Student student = student_of(roster, report.who);
    csv += csv_row({student.name.empty() ? report.who : student.name, student.student_id, student.email,
                    score_cell(asked_lab(report, lab))});
  }
  return csv;
}

std::vector<std::string> report_file_names(const std::vector<Report>& reports) {
  std::vector<std::string> names(reports.size());
  std::set<std::string> taken;  // ignoring case: macOS and Windows file systems do
  // A plain-ASCII folder's own name is its file name: no slug made of another folder's name
  // takes it first, whatever the order.
  for (std::size_t i = 0; i < reports.size(); ++i)
    if (slug(reports[i].who) == reports[i].who && taken.insert(lower(reports[i].who)).second)
      names[i] = reports[i].who;
  for (std::size_t i = 0; i < reports.size(); ++i) {
    if (!names[i].empty()) continue;
    const std::string base = slug(reports[i].who);
    std::string name = base;
    for (int n = 2; !taken.insert(lower(name)).second; ++n) name = base + "-" + std::to_string(n);
    names[i] = name;
  }
  return names;
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

namespace {

// A lab's per-student files for the platforms: gradescope/LAB/WHO/results.json (none where
// the lab was not judged here: Gradescope has no "not graded", and a missing file gives no
// score rather than a 0) and prairielearn/LAB/WHO/results.json.
void write_platform_files(const std::vector<Report>& reports, const std::vector<std::string>& names,
                          const LabSpec& spec, const fs::path& out) {
  for (std::size_t i = 0; i < reports.size(); ++i) {
    const fs::path gradescope = out / "gradescope" / spec.dir / names[i] / "results.json";
    if (const auto results = gradescope_results(reports[i], spec))
      write_text(gradescope, json_text(*results));
    else
      fs::remove(gradescope);  // an earlier run's, when the lab was judged then
    write_text(out / "prairielearn" / spec.dir / names[i] / "results.json",
               json_text(prairielearn_results(reports[i], spec)));
  }
}

}  // namespace

void write_batch_outputs(const std::vector<Report>& reports, const std::vector<LabSpec>& labs,
                         const std::string& out_dir, const Roster& roster) {
  const fs::path out(out_dir);
  write_text(out / "gradebook.csv", gradebook_csv(reports, labs, roster));
  write_text(out / "junit.xml", junit_xml(reports, labs));
  write_text(out / "canvas-import.csv", canvas_csv(reports, labs, roster));
  const std::vector<std::string> names = report_file_names(reports);
  for (const LabSpec& spec : labs) {
    write_text(out / "gradescope-scores" / (spec.dir + ".csv"), gradescope_scores_csv(reports, spec, roster));
    write_platform_files(reports, names, spec, out);
  }
  for (std::size_t i = 0; i < reports.size(); ++i) {
    const Report& report = reports[i];
    write_text(out / "students" / (names[i] + ".json"), json_text(to_json(report)));
    write_text(out / "students" / (names[i] + ".md"), to_markdown(report, false));
    write_text(out / "handout" / (names[i] + ".html"), to_html(report, labs, false));
  }
}

void write_run_reports(const Report& report, const std::vector<LabSpec>& labs, const std::string& dir) {
  const fs::path stem = fs::path(dir) / report.who;
  write_text(stem.string() + ".json", json_text(to_json(report)));
  write_text(stem.string() + ".md", to_markdown(report, true));
  write_text(stem.string() + ".html", to_html(report, labs, true));
}

}  // namespace grade
