#include "exports.h"

#include "report_html.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace fs = std::filesystem;
using nlohmann::json;

namespace grade {

namespace {

// RFC 4180: a field holding a comma, a quote or a line break is quoted, its quotes doubled.
std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
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

std::string lab_notes(const Report& report) {
  std::string notes;
  for (const LabResult& lab : report.labs)
    if (lab.status != LabStatus::graded)
      notes += (notes.empty() ? "" : "; ") + lab.id + ": " + to_string(lab.status);
  return notes;
}

}  // namespace

std::string gradebook_csv(const std::vector<Report>& reports, const std::vector<LabSpec>& labs) {
  std::ostringstream out;
  out << "student";
  for (const LabSpec& lab : labs) out << ",lab" << lab.id << "-" << lab.name;
  out << ",total,max,secret,notes\n";
  for (const Report& report : reports) {
    out << csv_field(report.who);
    for (const LabResult& lab : report.labs) out << "," << points_text(lab.points);
    out << "," << points_text(report.points) << "," << points_text(report.max_points) << ","
        << (report.secret_used ? "yes" : "no") << "," << csv_field(lab_notes(report)) << "\n";
  }
  return out.str();
}

json gradescope_results(const Report& report) {
  json tests = json::array();
  for (const LabResult& lab : report.labs) {
    for (const CaseResult& c : lab.cases) {
      std::string output = c.message;
      if (c.hidden && !c.passed()) output = "hidden case: details are withheld";
      tests.push_back({{"name", "lab " + lab.id + " " + lab.name + ": " + c.name},
                       {"score", std::round(c.points * 100) / 100},
                       {"max_score", std::round(c.max_points * 100) / 100},
                       {"status", c.passed() ? "passed" : "failed"},  // Gradescope knows no other
                       {"output", output},
                       {"visibility", c.hidden ? "hidden" : "visible"}});
    }
  }
  std::string summary;
  for (const LabResult& lab : report.labs)
    if (!lab.note.empty()) summary += "Lab " + lab.id + ": " + lab.note + "\n";
  return {{"score", std::round(report.points * 100) / 100}, {"output", summary}, {"visibility", "visible"},
          {"tests", tests}};
}

std::string junit_xml(const std::vector<Report>& reports) {
  std::ostringstream out;
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n";
  for (const Report& report : reports) {
    for (const LabResult& lab : report.labs) {
      // In a graded lab a case that could not run here (no MPI) is skipped; a lab that was not
      // graded (a build error...) fails every case that did not pass.
      auto skipped_here = [&lab](const CaseResult& c) { return !c.ran() && lab.status == LabStatus::graded; };
      std::size_t failures = 0, skipped = 0;
      for (const CaseResult& c : lab.cases) failures += !c.passed() && !skipped_here(c), skipped += skipped_here(c);
      out << "  <testsuite name=\"" << xml_escaped(report.who + " lab " + lab.id + " " + lab.name) << "\" tests=\""
          << lab.cases.size() << "\" failures=\"" << failures << "\" skipped=\"" << skipped << "\">\n";
      for (const CaseResult& c : lab.cases) {
        out << "    <testcase classname=\"" << xml_escaped(report.who + "." + lab.id + "-" + lab.name + "." + c.kind)
            << "\" name=\"" << xml_escaped(c.name) << "\">";
        const std::string message = xml_escaped(c.message.empty() ? lab.note : c.message);
        if (skipped_here(c))
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

void write_batch_outputs(const std::vector<Report>& reports, const std::vector<LabSpec>& labs,
                         const std::string& out_dir) {
  const fs::path out(out_dir);
  write_text(out / "gradebook.csv", gradebook_csv(reports, labs));
  write_text(out / "junit.xml", junit_xml(reports));
  for (const Report& report : reports) {
    // A folder name or a compiler message need not be valid UTF-8 (a Latin-1 zip): replace
    // what is not, rather than throw and lose the batch's reports.
    const auto replace = json::error_handler_t::replace;
    write_text(out / "students" / (report.who + ".json"), to_json(report).dump(2, ' ', false, replace));
    write_text(out / "students" / (report.who + ".md"), to_markdown(report, false));
    write_text(out / "students" / (report.who + ".html"), to_html(report, labs, false));
    write_text(out / "gradescope" / report.who / "results.json",
               gradescope_results(report).dump(2, ' ', false, replace));
  }
}

}  // namespace grade
