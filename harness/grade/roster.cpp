#include "roster.h"

#include "bad_input.h"

#include <algorithm>
#include <fstream>
#include <sstream>

namespace grade {

namespace {

std::string trimmed(const std::string& text) {
  const auto first = text.find_first_not_of(" \t");
  if (first == std::string::npos) return {};
  return text.substr(first, text.find_last_not_of(" \t") - first + 1);
}

bool blank(const std::vector<std::string>& record) {
  return std::all_of(record.begin(), record.end(), [](const std::string& field) { return trimmed(field).empty(); });
}

// Where each known column is in the header; -1 when absent.
struct Columns {
  int folder = -1, student_id = -1, name = -1, email = -1;
};

Columns columns_of(const std::vector<std::string>& header) {
  Columns columns;
  for (int i = 0; i < int(header.size()); ++i) {
    const std::string name = trimmed(header[i]);
    if (name == "folder") columns.folder = i;
    if (name == "student_id") columns.student_id = i;
    if (name == "name") columns.name = i;
    if (name == "email") columns.email = i;
  }
  return columns;
}

std::string field(const std::vector<std::string>& record, int column) {
  return column >= 0 && column < int(record.size()) ? trimmed(record[column]) : std::string();
}

}  // namespace

std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
  std::vector<std::vector<std::string>> records(1);
  std::string current;
  bool quoted = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c != '"') current += c;
      else if (i + 1 < text.size() && text[i + 1] == '"') current += '"', ++i;
      else quoted = false;
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      records.back().push_back(current), current.clear();
    } else if (c == '\n' || c == '\r') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      records.back().push_back(current), current.clear();
      records.emplace_back();
    } else {
      current += c;
    }
  }
  records.back().push_back(current);
  if (records.back().size() == 1 && records.back()[0].empty()) records.pop_back();  // the last line's end
  return records;
}

Roster parse_roster(const std::string& text, const std::string& file_name) {
  const std::string bom = "\xEF\xBB\xBF";
  const auto records = parse_csv(text.compare(0, bom.size(), bom) == 0 ? text.substr(bom.size()) : text);
  const Columns columns = records.empty() ? Columns{} : columns_of(records.front());
  if (columns.folder < 0)
    throw BadInput("the roster " + file_name +
                   " has no `folder` column: its first row must name the columns, e.g. folder,student_id,name,email");
  Roster roster;
  for (std::size_t row = 1; row < records.size(); ++row) {
    const auto& record = records[row];
    if (blank(record)) continue;
    const std::string where = "the roster " + file_name + ", row " + std::to_string(row + 1);
    const Student student{field(record, columns.folder), field(record, columns.student_id),
                          field(record, columns.name), field(record, columns.email)};
    if (student.folder.empty()) throw BadInput(where + ": no folder name");
    if (!roster.emplace(student.folder, student).second)
      throw BadInput(where + ": the folder " + student.folder + " is listed twice");
  }
  return roster;
}

Roster read_roster(const std::string& path) {
  if (path.empty()) return {};
  std::ifstream in(path, std::ios::binary);
  if (!in) throw BadInput("cannot read the roster " + path + " (--roster)");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_roster(text.str(), path);
}

Student student_of(const Roster& roster, const std::string& folder) {
  const auto found = roster.find(folder);
  return found != roster.end() ? found->second : Student{folder};
}

std::vector<std::string> folders_missing_from(const Roster& roster, const std::vector<std::string>& folders) {
  std::vector<std::string> missing;
  for (const std::string& folder : folders)
    if (!roster.count(folder)) missing.push_back(folder);
  return missing;
}

}  // namespace grade
