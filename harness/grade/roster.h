// The course's roster (`--roster FILE`): who each submission folder belongs to, so that the
// exports for course platforms (Canvas, Gradescope) carry the ids those platforms match on.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace grade {

struct Student {
  std::string folder;      // the submission folder's name, as in the gradebook
  std::string student_id;  // the institution's id: Canvas's "SIS User ID", Gradescope's "SID"
  std::string name;
  std::string email;
};

using Roster = std::map<std::string, Student>;  // by folder

// A roster CSV: a header row naming its columns, `folder` required, `student_id`, `name` and
// `email` optional, in any order (other columns are ignored), then a row per student. A UTF-8
// byte-order mark and CRLF line ends (a spreadsheet's export) are accepted. Throws BadInput
// (bad_input.h) naming the file and row: no folder column, a row without a folder, a folder
// listed twice.
Roster parse_roster(const std::string& text, const std::string& file_name);
Roster read_roster(const std::string& path);  // "" gives an empty roster

// The roster's row for a folder, or one with the folder's name alone.
Student student_of(const Roster& roster, const std::string& folder);

// Folders that the roster does not list: the platforms cannot match their rows to a student.
std::vector<std::string> folders_missing_from(const Roster& roster, const std::vector<std::string>& folders);

// RFC 4180 records: quoted fields may hold commas, doubled quotes and line breaks.
std::vector<std::vector<std::string>> parse_csv(const std::string& text);

}  // namespace grade
