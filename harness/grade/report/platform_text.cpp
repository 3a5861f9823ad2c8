#include "report/platform_text.h"

namespace grade {

namespace {

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

}  // namespace

std::string test_name(const CaseResult& c) { return c.kind + ": " + c.name; }

std::string case_output(const CaseResult& c) {
  if (c.kind != "performance" || (c.hidden && !c.passed())) return visible_message(c, false);
  std::string output = timing_line(c);
  if (!c.message.empty()) output += (output.empty() ? "" : "; ") + c.message;
  return output;
}

std::string lab_output(const LabResult& lab) {
  std::string output = "Lab " + lab.id + " " + lab.name + ": " + points_line(lab) +
                       (lab.note.empty() ? "" : "; " + lab.note) + "\n";
  if (!lab.build_log.empty()) output += cut_log(lab.build_log) + "\n";
  return output;
}

}  // namespace grade
