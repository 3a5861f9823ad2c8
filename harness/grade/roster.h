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
  // The name the class speed board (board.h) shows: the student's own choice, seen by the whole
  // class. Empty: the student is left off the board.
  std::string handle;
};

using Roster = std::map<std::string, Student>;  // by folder, composed (unicode.h)

// A roster CSV: a header row naming its columns, `folder` required, `student_id`, `name`,
// `email` and `handle` optional, in any order (other columns are ignored), then a row per
// student. A UTF-8 byte-order mark and CRLF line ends (a spreadsheet's export) are accepted.
// Throws BadInput (bad_input.h) naming the file and row: no folder column, a row without a
// folder, a folder listed twice, a handle another student has (ignoring case).
Roster parse_roster(const std::string& text, const std::string& file_name);
Roster read_roster(const std::string& path);  // "" gives an empty roster

// Folder names match whichever way their accents were written: "José" from a macOS zip (e and
// U+0301) is the roster's "José" (U+00E9).

// The roster's row for a folder, or one with the folder's name alone.
Student student_of(const Roster& roster, const std::string& folder);

// Folders that the roster does not list: the platforms cannot match their rows to a student.
std::vector<std::string> folders_missing_from(const Roster& roster, const std::vector<std::string>& folders);

// Students of the roster with no folder among `folders`: nothing of theirs was graded.
std::vector<Student> students_without_folder(const Roster& roster, const std::vector<std::string>& folders);

// What an instructor must hear before uploading the platforms' files, a line each: no roster
// (the files carry no ids, which Canvas and Gradescope match rows on), folders the roster does
// not list, and students of the roster with no folder (nothing of theirs was graded).
std::vector<std::string> roster_warnings(const Roster& roster, const std::vector<std::string>& folders);

// RFC 4180 records: quoted fields may hold commas, doubled quotes and line breaks.
std::vector<std::vector<std::string>> parse_csv(const std::string& text);

}  // namespace grade
