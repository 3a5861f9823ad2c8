#include "report/junit_xml.h"

#include "report/batch_rows.h"
#include "report/html_report.h"

#include <sstream>

namespace grade {

namespace {

// XML 1.0 takes no control characters but tab and newline; the markup escapes are HTML's.
std::string xml_escaped(const std::string& text) {
  std::string printable = text;
  for (char& c : printable)
    if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t') c = ' ';
  return html_escaped(printable);
}

// The lab as a whole: built, ran and reported, or why not, once rather than on every case; a
// build's messages are the failure's text.
void lab_test_case(std::ostringstream& out, const LabResult& lab, const std::string& classname,
                   const std::string& reason) {
  out << "    <testcase classname=\"" << classname << "\" name=\"lab graded\">";
  if (!judged_here(lab))
    out << "<skipped message=\"" << xml_escaped(reason) << "\"/>";
  else if (!reason.empty())
    out << "<failure message=\"" << xml_escaped(reason) << "\">" << xml_escaped(lab.build_log) << "</failure>";
  out << "</testcase>\n";
}

void case_test_case(std::ostringstream& out, const CaseResult& c, const std::string& classname,
                    const std::string& reason) {
  out << "    <testcase classname=\"" << classname << "." << xml_escaped(c.kind) << "\" name=\""
      << xml_escaped(c.name) << "\">";
  // A case of a lab not graded says so in the lab's words: its own message may point at text
  // (the compiler's messages) that only the report has.
  const std::string message = xml_escaped(!reason.empty() && !c.ran() ? "the lab was not graded: " + reason
                                          : c.message.empty()          ? reason
                                                                       : c.message);
  if (!c.ran())
    out << "<skipped message=\"" << message << "\"/>";
  else if (!c.passed())
    out << "<failure message=\"" << message << "\"/>";
  out << "</testcase>\n";
}

void lab_test_suite(std::ostringstream& out, const Report& report, const LabResult& lab) {
  const std::string reason = not_graded_reason(lab);
  const bool lab_failed = !reason.empty() && judged_here(lab);
  std::size_t failures = lab_failed, skipped = !judged_here(lab);
  for (const CaseResult& c : lab.cases) failures += c.ran() && !c.passed(), skipped += !c.ran();
  const std::string classname = xml_escaped(report.who + "." + lab.id + "-" + lab.name);
  out << "  <testsuite name=\"" << xml_escaped(report.who + " lab " + lab.id + " " + lab.name) << "\" tests=\""
      << lab.cases.size() + 1 << "\" failures=\"" << failures << "\" skipped=\"" << skipped << "\">\n";
  lab_test_case(out, lab, classname, reason);
  for (const CaseResult& c : lab.cases) case_test_case(out, c, classname, reason);
  out << "  </testsuite>\n";
}

}  // namespace

std::string junit_xml(const std::vector<Report>& reports, const std::vector<LabSpec>& labs) {
  std::ostringstream out;
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n";
  for (const Report& report : reports)
    for (const LabResult* lab : asked_labs(report, labs)) lab_test_suite(out, report, *lab);
  out << "</testsuites>\n";
  return out.str();
}

void JunitXmlWriter::write_batch(const BatchOutput& batch) {
  write_file(batch.dir / "junit.xml", junit_xml(batch.reports, batch.labs));
}

}  // namespace grade
