#include "roster.h"

#include "bad_input.h"
#include "text.h"
#include "unicode.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <set>
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
  int folder = -1, student_id = -1, name = -1, email = -1, handle = -1;
};

Columns columns_of(const std::vector<std::string>& header) {
  Columns columns;
  for (int i = 0; i < int(header.size()); ++i) {
    const std::string name = trimmed(header[i]);
    if (name == "folder") columns.folder = i;
    if (name == "student_id") columns.student_id = i;
    if (name == "name") columns.name = i;
    if (name == "email") columns.email = i;
    if (name == "handle") columns.handle = i;
  }
  return columns;
}

std::string field(const std::vector<std::string>& record, int column) {
  return column >= 0 && column < int(record.size()) ? trimmed(record[column]) : std::string();
}

// Two handles a reader cannot tell apart on the board ("Ada", "ada", an accent written two
// ways) are one.
std::string handle_key(const std::string& handle) {
  std::string key = composed(handle);
  for (char& c : key) c = char(std::tolower(static_cast<unsigned char>(c)));
  return key;
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
  std::set<std::string> handles;
  for (std::size_t row = 1; row < records.size(); ++row) {
    const auto& record = records[row];
    if (blank(record)) continue;
    const std::string where = "the roster " + file_name + ", row " + std::to_string(row + 1);
    const Student student{field(record, columns.folder), field(record, columns.student_id),
                          field(record, columns.name), field(record, columns.email), field(record, columns.handle)};
    if (student.folder.empty()) throw BadInput(where + ": no folder name");
    if (!roster.emplace(composed(student.folder), student).second)
      throw BadInput(where + ": the folder " + student.folder + " is listed twice");
    if (!student.handle.empty() && !handles.insert(handle_key(student.handle)).second)
      throw BadInput(where + ": the handle " + student.handle + " is another student's too");
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
  const auto found = roster.find(composed(folder));
  return found != roster.end() ? found->second : Student{folder};
}

std::vector<std::string> folders_missing_from(const Roster& roster, const std::vector<std::string>& folders) {
  std::vector<std::string> missing;
  for (const std::string& folder : folders)
    if (!roster.count(composed(folder))) missing.push_back(folder);
  return missing;
}

std::vector<Student> students_without_folder(const Roster& roster, const std::vector<std::string>& folders) {
  std::set<std::string> handed_in;
  for (const std::string& folder : folders) handed_in.insert(composed(folder));
  std::vector<Student> missing;
  for (const auto& [folder, student] : roster)
    if (!handed_in.count(folder)) missing.push_back(student);
  return missing;
}

std::vector<std::string> roster_warnings(const Roster& roster, const std::vector<std::string>& folders) {
  if (roster.empty())
    return {"no --roster: canvas-import.csv and gradescope-scores/ carry no student ids, and Canvas and Gradescope "
            "match rows on them (the README's \"Taking grades to your course platform\" says how to write one)"};
  std::vector<std::string> warnings;
  if (const auto missing = folders_missing_from(roster, folders); !missing.empty())
    warnings.push_back("the roster does not list " + std::to_string(missing.size()) +
                       " submission folder(s), so the platforms' files carry no id for them: " + joined(missing, ", "));
  std::vector<std::string> names;
  for (const Student& student : students_without_folder(roster, folders))
    names.push_back(student.folder + (student.name.empty() || student.name == student.folder ? "" : " (" + student.name + ")"));
  if (!names.empty())
    warnings.push_back(std::to_string(names.size()) + " student(s) of the roster have no submission folder, so " +
                       "nothing of theirs was graded and the files have no row for them: " + joined(names, ", "));
  return warnings;
}

}  // namespace grade
