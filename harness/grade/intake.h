// Taking students' files in: what a submission may hand in, checked before anything is read.
// Submissions are hostile or broken input: a link could point at the kit's solutions or at
// /etc/passwd, a named pipe would block the reader forever, a huge file would fill the disk.
// Each refusal is one line a student can act on.
#pragma once

#include "catalog.h"
#include "model.h"

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace grade {

constexpr std::uintmax_t max_student_file_bytes = std::uintmax_t(1) << 20;

// Why this student file cannot be taken (empty when it can): not found, a symbolic link, not
// a regular file, over the size limit, unreadable. Looks with lstat, so a link is never
// followed and a pipe never opened. `shown_name` is how the message names the file.
std::string student_file_problem(const std::filesystem::path& file, const std::string& shown_name);

// The first problem with a lab's folder (a symbolic link) or one of its declared files;
// empty when all of them can be taken.
std::string student_files_problem(const std::filesystem::path& dir, const std::vector<std::string>& files);

// The files a submission in `dir` must hand in for its lab to be graded: all the lab's student
// files but those of a part of `modules:` (lab 13's part 2) of which `dir` holds none. Such a
// part is graded as not handed in: its cases say so and score nothing, the rest as usual.
std::vector<std::string> required_files(const LabSpec& lab, const std::filesystem::path& dir);

// Why an entry of the submissions folder is not a submission folder (empty when it is): a
// file such as alice.zip, a symbolic link, a pipe.
std::string submission_problem(const std::filesystem::path& entry);

// The first symbolic link on the way from `base` down to base/relative (that path), empty when
// there is none. `base` itself is not looked at: it is the instructor's, not the student's.
std::filesystem::path first_symlink(const std::filesystem::path& base, const std::filesystem::path& relative);

// Whether `dir` is a real folder with an entry for each of `files`, of any type: a link or a
// pipe counts as there, so that its refusal names it rather than saying "not found".
bool holds_all(const std::filesystem::path& dir, const std::vector<std::string>& files);

// Where a lab's student files are: `base/labs/NN-name/`, `base/NN-name/` or `base/` itself
// (a clone of the kit, or the files alone), the first that holds them all, passing over a copy
// that is the kit's starter unchanged while another is there (a clone with the work at the
// top). Empty when none holds them all. Never through a
// symbolic link below base: a linked lab folder comes back as the link, which build_lab refuses.
std::string find_student_dir(const LabSpec& lab, const std::string& base);

// When more than one of those places holds all of a lab's student files, the copies left out
// beside `chosen` (find_student_dir's pick), as a note for the student, naming a copy that is
// the kit's starter unchanged; empty with one copy.
std::string copies_left_out(const LabSpec& lab, const std::string& base, const std::string& chosen);

// The note of a lab for which no place holds the student files: it was not handed in.
std::string not_found_note(const LabSpec& lab);
// Whether `result`, lab `lab`'s, is that of a lab not handed in at all.
bool not_handed_in(const LabResult& result, const LabSpec& lab);

// "3.2 MiB", rounded up so that a file just over the limit does not read as at it.
std::string size_text(std::uintmax_t bytes);

}  // namespace grade
