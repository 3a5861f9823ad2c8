#include "exports.h"

#include "intake.h"
#include "report_html.h"

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

namespace {

// ---- Text and files

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

std::string points_text(double points) {
  std::ostringstream out;
  out.precision(10);
  out << std::round(points * 10) / 10;
  return out.str();
}

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

double total_points(const std::vector<const LabResult*>& labs) {
  return std::accumulate(labs.begin(), labs.end(), 0.0, [](double sum, const LabResult* lab) { return sum + lab->points; });
}

double total_max_points(const std::vector<const LabResult*>& labs) {
  return std::accumulate(labs.begin(), labs.end(), 0.0,
                         [](double sum, const LabResult* lab) { return sum + lab->max_points; });
}

// Whether the lab's points were decided here: not where this machine could not run it (no
// GPU) or the kit failed, which say nothing of the student.
bool scored_here(const LabResult& lab) {
  return lab.status != LabStatus::not_run && lab.status != LabStatus::kit_fault;
}

// The lab as a platform's score cell: blank where it was not scored here, so that an import
// leaves the platform's grade as it was.
const LabResult* scored_lab(const Report& report, const LabSpec& spec) {
  const LabResult* lab = asked_lab(report, spec);
  return lab && scored_here(*lab) ? lab : nullptr;
}

std::string lab_column(const LabSpec& spec) { return "Lab " + spec.id + " " + spec.name; }

// Labs not graded for the same reason go together: a submission that is a file is one note.
struct LabsWithReason {
  std::vector<std::string> ids;
  std::string reason;
};

// A lab not handed in says so in three words: in a class's batch there are many, each naming
// its own file. Any other lab not graded gives its report's reason.
std::string reason_in_gradebook(const LabResult& lab, const LabSpec& spec) {
  if (lab.status == LabStatus::missing_files && lab.note == not_found_note(spec)) return "not handed in";
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

// Whether lab `next` comes right after lab `id`: both numbers ("05", "06").
bool follows(const std::string& id, const std::string& next) {
  const auto is_number = [](const std::string& text) {
    return !text.empty() && text.size() < 6 && text.find_first_not_of("0123456789") == std::string::npos;
  };
  return is_number(id) && is_number(next) && std::stoi(next) == std::stoi(id) + 1;
}

// "01, 03, 05-13": three or more labs in a row as a range.
std::string labs_named(const LabsWithReason& labs) {
  const std::vector<std::string>& ids = labs.ids;
  std::string named;
  for (std::size_t first = 0, last = 0; first < ids.size(); first = last + 1) {
    for (last = first; last + 1 < ids.size() && follows(ids[last], ids[last + 1]);) ++last;
    if (last - first < 2) last = first;
    named += (named.empty() ? "" : ", ") + ids[first] + (last > first ? "-" + ids[last] : "");
  }
  return named;
}

// ---- Points in hundredths that add up

// Shares of `total` hundredths in proportion to `weights`: each rounded down, the hundredths
// left over to the largest remainders, so that they add up to `total` exactly.
std::vector<long long> hundredths_adding_up(const std::vector<double>& weights, long long total) {
  const double weight_sum = std::accumulate(weights.begin(), weights.end(), 0.0);
  std::vector<long long> shares(weights.size(), 0);
  if (weight_sum <= 0) return shares;
  std::vector<std::pair<double, std::size_t>> remainders;
  long long given = 0;
  for (std::size_t i = 0; i < weights.size(); ++i) {
    const double exact = double(total) * weights[i] / weight_sum;
    shares[i] = static_cast<long long>(std::floor(exact + 1e-9));
    given += shares[i];
    remainders.push_back({exact - double(shares[i]), i});
  }
  std::stable_sort(remainders.begin(), remainders.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (std::size_t k = 0; given < total && k < remainders.size(); ++k, ++given) ++shares[remainders[k].second];
  return shares;
}

// Each case's maximum, in hundredths: the total shared among the labs, each lab's among its cases.
std::vector<std::vector<long long>> case_maxima(const std::vector<const LabResult*>& labs) {
  std::vector<double> lab_maxima;
  for (const LabResult* lab : labs) lab_maxima.push_back(lab->max_points);
  const auto lab_shares = hundredths_adding_up(lab_maxima, std::llround(total_max_points(labs) * 100));
  std::vector<std::vector<long long>> maxima;
  for (std::size_t l = 0; l < labs.size(); ++l) {
    std::vector<double> case_weights;
    for (const CaseResult& c : labs[l]->cases) case_weights.push_back(c.max_points);
    maxima.push_back(hundredths_adding_up(case_weights, lab_shares[l]));
  }
  return maxima;
}

// A case's score in hundredths: full marks are its whole share, never a hundredth short.
long long case_score(const CaseResult& c, long long max_hundredths) {
  if (c.max_points > 0 && c.points >= c.max_points - 1e-9) return max_hundredths;
  return std::min(std::llround(c.points * 100), max_hundredths);
}

double from_hundredths(long long hundredths) { return double(hundredths) / 100; }

// ---- What the platforms show

std::string test_name(const LabResult& lab, const CaseResult& c) {
  return "lab " + lab.id + " " + lab.name + ": " + c.name;
}

// A case's details as a student may see them: the hint, or the timing and its note.
std::string case_output(const CaseResult& c) {
  if (c.kind != "performance" || (c.hidden && !c.passed())) return visible_message(c, false);
  std::string output = timing_line(c);
  if (!c.message.empty()) output += (output.empty() ? "" : "; ") + c.message;
  return output;
}

// Per lab: its points and note, then the compiler's messages when there are any.
std::string labs_output(const std::vector<const LabResult*>& labs) {
  std::string output;
  for (const LabResult* lab : labs) {
    output += "Lab " + lab->id + " " + lab->name + ": " + format("%.1f / %.0f points", lab->points, lab->max_points) +
              (lab->note.empty() ? "" : "; " + lab->note) + "\n";
    if (!lab->build_log.empty()) output += cut_log(lab->build_log) + "\n";
  }
  return output;
}

// ---- Safe file names

// Latin letters with accents, U+00C0 to U+017F, by their base letter; '-' for × and ÷.
constexpr std::string_view latin_1_letters = "AAAAAAACEEEEIIIIDNOOOOO-OUUUUYTsaaaaaaaceeeeiiiidnooooo-ouuuuyty";
constexpr std::string_view latin_extended_a_letters =
    "AaAaAaCcCcCcCcDdDdEeEeEeEeEeGgGgGgGgHhHhIiIiIiIiIiIiJjKkkLlLlLlLlLlNnNnNnnNnOoOoOoOoRrRrRrSsSsSsSsTtTtTtUuUuUuUuUuUuWwYyYZzZzZzs";
static_assert(latin_1_letters.size() == 0x100 - 0xC0, "a letter for each code point from U+00C0 to U+00FF");
static_assert(latin_extended_a_letters.size() == 0x180 - 0x100, "a letter for each code point from U+0100 to U+017F");

// The code point at text[at] and its length in bytes; an invalid byte is itself, length 1.
std::pair<char32_t, std::size_t> decode_utf8(const std::string& text, std::size_t at) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(at);
  const std::size_t length = lead < 0x80 ? 1 : (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xE ? 3 : (lead >> 3) == 0x1E ? 4 : 0;
  if (length == 0 || at + length > text.size()) return {0xFFFD, 1};
  char32_t code = length == 1 ? lead : lead & (0x7F >> length);
  for (std::size_t i = 1; i < length; ++i) {
    if (!continuation_byte(text[at + i])) return {0xFFFD, 1};
    code = (code << 6) | (byte(at + i) & 0x3F);
  }
  return {code, length};
}

bool combining_mark(char32_t code) { return code >= 0x300 && code <= 0x36F; }  // an accent of a decomposed "é"

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
    for (const LabSpec& spec : labs) {
      const LabResult* lab = asked_lab(report, spec);
      row.push_back(lab ? points_text(lab->points) : "");
    }
    std::string notes;
    for (const LabsWithReason& labs_with : not_graded_reasons(report, labs))
      notes += (notes.empty() ? "" : "; ") + labs_named(labs_with) + ": " + labs_with.reason;
    const auto asked = asked_labs(report, labs);
    row.insert(row.end(), {points_text(total_points(asked)), points_text(total_max_points(asked)),
                           report.secret_used ? "yes" : "no", notes});
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
      const bool lab_failed = !reason.empty() && scored_here(*lab);
      std::size_t failures = lab_failed, skipped = !scored_here(*lab);
      for (const CaseResult& c : lab->cases) failures += c.ran() && !c.passed(), skipped += !c.ran();
      const std::string classname = xml_escaped(report.who + "." + lab->id + "-" + lab->name);
      out << "  <testsuite name=\"" << xml_escaped(report.who + " lab " + lab->id + " " + lab->name) << "\" tests=\""
          << lab->cases.size() + 1 << "\" failures=\"" << failures << "\" skipped=\"" << skipped << "\">\n";
      // The lab as a whole: built, ran and reported, or why not, once rather than on every case.
      out << "    <testcase classname=\"" << classname << "\" name=\"lab graded\">";
      if (!scored_here(*lab)) out << "<skipped message=\"" << xml_escaped(reason) << "\"/>";
      else if (lab_failed) out << "<failure message=\"" << xml_escaped(reason) << "\"/>";
      out << "</testcase>\n";
      for (const CaseResult& c : lab->cases) {
        out << "    <testcase classname=\"" << classname << "." << xml_escaped(c.kind) << "\" name=\""
            << xml_escaped(c.name) << "\">";
        const std::string message = xml_escaped(c.message.empty() ? reason : c.message);
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

// Calls visit(lab, case, score, maximum) for every case of the labs asked for, the points in
// hundredths (case_maxima): what both platforms' per-test lists are made of.
template <class Visit>
void for_each_scored_case(const std::vector<const LabResult*>& asked, Visit visit) {
  const auto maxima = case_maxima(asked);
  for (std::size_t l = 0; l < asked.size(); ++l)
    for (std::size_t i = 0; i < asked[l]->cases.size(); ++i) {
      const CaseResult& c = asked[l]->cases[i];
      visit(*asked[l], c, case_score(c, maxima[l][i]), maxima[l][i]);
    }
}

json gradescope_results(const Report& report, const std::vector<LabSpec>& labs) {
  const auto asked = asked_labs(report, labs);
  json tests = json::array();
  for_each_scored_case(asked, [&](const LabResult& lab, const CaseResult& c, long long score, long long max) {
    tests.push_back({{"name", test_name(lab, c)},
                     {"score", from_hundredths(score)},
                     {"max_score", from_hundredths(max)},
                     {"status", c.passed() ? "passed" : "failed"},  // Gradescope knows no other
                     {"output", case_output(c)},
                     {"visibility", c.hidden ? "hidden" : "visible"}});
  });
  // The total is what the tests add up to, as Gradescope would add them: a student with full
  // marks gets the maximum exactly.
  long long score = 0;
  for (const json& test : tests) score += std::llround(test["score"].get<double>() * 100);
  return {{"score", from_hundredths(score)},
          {"output", labs_output(asked)},
          {"visibility", "visible"},
          {"tests", tests}};
}

json prairielearn_results(const Report& report, const std::vector<LabSpec>& labs) {
  const auto asked = asked_labs(report, labs);
  json tests = json::array();
  for_each_scored_case(asked, [&](const LabResult& lab, const CaseResult& c, long long score, long long max) {
    tests.push_back({{"name", test_name(lab, c)},
                     {"description", lab.title + ": a " + c.kind + " case" + (c.hidden ? " (hidden)" : "")},
                     {"points", from_hundredths(score)},
                     {"max_points", from_hundredths(max)},
                     {"message", c.passed() ? "passed" : c.ran() ? "failed" : "not run"},
                     {"output", case_output(c)}});
  });
  const bool gradable = std::any_of(asked.begin(), asked.end(), [](const LabResult* lab) { return scored_here(*lab); });
  const double points = total_points(asked), max = total_max_points(asked);
  json results = {{"gradable", gradable},
                  {"message", gradable ? format("%.1f / %.0f points", points, max)
                                       : "nothing could be judged here (no GPU, or a fault of the kit): not graded"},
                  {"output", labs_output(asked)},
                  {"tests", tests}};
  if (gradable) results["score"] = max > 0 ? std::clamp(points / max, 0.0, 1.0) : 0.0;
  return results;
}

std::string canvas_csv(const std::vector<Report>& reports, const std::vector<LabSpec>& labs, const Roster& roster) {
  std::vector<std::string> header = {"Student", "ID", "SIS User ID", "SIS Login ID", "Section"};
  std::vector<std::string> points_possible = {"Points Possible", "", "", "", ""};
  for (const LabSpec& spec : labs) {
    header.push_back(lab_column(spec));
    points_possible.push_back(points_text(max_points(spec)));
  }
  std::string csv = csv_row(header) + csv_row(points_possible);
  for (const Report& report : reports) {
    const Student student = student_of(roster, report.who);
    // Canvas matches a row on its ID, then the SIS ids; the name is for the reader.
    std::vector<std::string> row = {student.name.empty() ? report.who : student.name, "", student.student_id,
                                    student.email, ""};
    for (const LabSpec& spec : labs) {
      const LabResult* lab = scored_lab(report, spec);
      row.push_back(lab ? points_text(lab->points) : "");
    }
    csv += csv_row(row);
  }
  return csv;
}

std::string gradescope_scores_csv(const std::vector<Report>& reports, const std::vector<LabSpec>& labs,
                                  const Roster& roster) {
  std::vector<std::string> header = {"Name", "SID", "Email"};
  for (const LabSpec& spec : labs) header.push_back(lab_column(spec));
  header.push_back("Total Score");
  std::string csv = csv_row(header);
  for (const Report& report : reports) {
    const Student student = student_of(roster, report.who);
    std::vector<std::string> row = {student.name.empty() ? report.who : student.name, student.student_id,
                                    student.email};
    double total = 0;
    bool any_scored = false;
    for (const LabSpec& spec : labs) {
      const LabResult* lab = scored_lab(report, spec);
      row.push_back(lab ? points_text(lab->points) : "");
      total += lab ? lab->points : 0;
      any_scored = any_scored || lab;
    }
    row.push_back(any_scored ? points_text(total) : "");
    csv += csv_row(row);
  }
  return csv;
}

std::vector<std::string> report_file_names(const std::vector<Report>& reports) {
  std::vector<std::string> names;
  std::set<std::string> taken;  // ignoring case: macOS and Windows file systems do
  for (const Report& report : reports) {
    const std::string base = slug(report.who);
    std::string name = base;
    for (int n = 2; !taken.insert(lower(name)).second; ++n) name = base + "-" + std::to_string(n);
    names.push_back(name);
  }
  return names;
}

std::string batch_summary(const std::vector<Report>& reports, const std::vector<LabSpec>& labs) {
  constexpr std::size_t min_width = 12, max_width = 40;  // a longer name pushes its own line's columns only
  std::size_t width = min_width;
  for (const Report& report : reports) width = std::max(width, std::min(max_width, display_width(one_line(report.who))));
  std::string summary;
  for (const Report& report : reports) {
    const std::string name = one_line(report.who);
    const auto asked = asked_labs(report, labs);
    summary += name + std::string(width - std::min(width, display_width(name)), ' ') +
               format("  %6.1f / %.0f\n", total_points(asked), total_max_points(asked));
    for (const LabsWithReason& labs_with : not_graded_reasons(report, labs))
      summary += std::string("    lab") + (labs_with.ids.size() > 1 ? "s " : " ") + labs_named(labs_with) + ": " +
                 one_line(labs_with.reason) + "\n";
  }
  return summary;
}

void write_batch_outputs(const std::vector<Report>& reports, const std::vector<LabSpec>& labs,
                         const std::string& out_dir, const Roster& roster) {
  const fs::path out(out_dir);
  write_text(out / "gradebook.csv", gradebook_csv(reports, labs, roster));
  write_text(out / "junit.xml", junit_xml(reports, labs));
  write_text(out / "canvas-import.csv", canvas_csv(reports, labs, roster));
  write_text(out / "gradescope-scores.csv", gradescope_scores_csv(reports, labs, roster));
  const std::vector<std::string> names = report_file_names(reports);
  for (std::size_t i = 0; i < reports.size(); ++i) {
    const Report& report = reports[i];
    write_text(out / "students" / (names[i] + ".json"), json_text(to_json(report)));
    write_text(out / "students" / (names[i] + ".md"), to_markdown(report, false));
    write_text(out / "handout" / (names[i] + ".html"), to_html(report, labs, false));
    write_text(out / "gradescope" / names[i] / "results.json", json_text(gradescope_results(report, labs)));
    write_text(out / "prairielearn" / names[i] / "results.json", json_text(prairielearn_results(report, labs)));
  }
}

void write_run_reports(const Report& report, const std::vector<LabSpec>& labs, const std::string& dir) {
  const fs::path stem = fs::path(dir) / report.who;
  write_text(stem.string() + ".json", json_text(to_json(report)));
  write_text(stem.string() + ".md", to_markdown(report, true));
  write_text(stem.string() + ".html", to_html(report, labs, true));
}

}  // namespace grade
