#include "intake.h"

#include "labkit/fingerprint.h"

#include <algorithm>
#include <filesystem>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <system_error>

namespace fs = std::filesystem;

namespace grade {

namespace {

// errno in words; thread-safe, unlike strerror (builds check files in parallel).
std::string errno_text(int error) { return std::error_code(error, std::generic_category()).message(); }

// What an entry that is not a regular file is, in a student's words.
std::string kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISFIFO(mode)) return "a named pipe";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  return "not a regular file";
}

// Tries to open the file as it will be read: O_NOFOLLOW and O_NONBLOCK so that a link or a
// pipe swapped in since the lstat is still neither followed nor waited on. Empty when it opens.
std::string open_problem(const fs::path& file) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return errno_text(errno);
  ::close(fd);
  return {};
}

std::string linked_folder(const fs::path& link) {
  return "the folder " + link.filename().string() + " is a symbolic link; hand in the folder itself, not a link to it";
}

}  // namespace

std::string size_text(std::uintmax_t bytes) {
  constexpr std::uintmax_t mib = 1 << 20;
  if (bytes < mib) return std::to_string(bytes) + " bytes";
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", std::ceil(double(bytes) * 10 / double(mib)) / 10);
  std::string number = text;
  if (number.size() > 2 && number.compare(number.size() - 2, 2, ".0") == 0) number.resize(number.size() - 2);
  return number + " MiB";
}

std::string not_found_note(const LabSpec& lab) {
  return "student files not found (expected: " + lab.student_files.front() + "): lab not graded";
}

bool not_handed_in(const LabResult& result, const LabSpec& lab) {
  return result.status == LabStatus::missing_files && result.note == not_found_note(lab);
}

std::string student_file_problem(const fs::path& file, const std::string& shown_name) {
  struct stat info {};
  if (::lstat(file.c_str(), &info) != 0) {
    const int error = errno;
    if (error == ENOENT || error == ENOTDIR) return shown_name + " not found";
    return shown_name + " cannot be read (" + errno_text(error) + ")";
  }
  if (S_ISLNK(info.st_mode)) return shown_name + " is a symbolic link; hand in the file itself";
  if (!S_ISREG(info.st_mode))
    return shown_name + " is " + kind_of(info.st_mode) + ", not a file; hand in the file itself";
  if (std::uintmax_t(info.st_size) > max_student_file_bytes)
    return shown_name + " is " + size_text(info.st_size) + "; student files are limited to " +
           size_text(max_student_file_bytes);
  if (const std::string why = open_problem(file); !why.empty())
    return shown_name + " cannot be read (" + why + "); make it readable and hand it in again";
  return {};
}

namespace {

// "a.cu and b.cu" (three or more: "a.cu, b.cu and c.cu").
std::string listed(const std::vector<std::string>& names) {
  std::string text;
  for (std::size_t i = 0; i < names.size(); ++i)
    text += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
  return text;
}

}  // namespace

std::string student_files_problem(const fs::path& dir, const std::vector<std::string>& files) {
  std::error_code ignored;
  if (fs::is_symlink(fs::symlink_status(dir, ignored))) return linked_folder(dir);
  std::vector<std::string> missing;  // named together: a lab of several parts, handed in in part
  for (const std::string& file : files) {
    // A declared file in a subfolder must not be reached through a linked subfolder either.
    if (const fs::path link = first_symlink(dir, fs::path(file).parent_path()); !link.empty())
      return linked_folder(link);
    if (fs::symlink_status(dir / file, ignored).type() == fs::file_type::not_found) {
      missing.push_back(file);
    } else if (const std::string problem = student_file_problem(dir / file, file); !problem.empty()) {
      return problem;
    }
  }
  if (missing.empty()) return {};
  return listed(missing) + " not found" +
         (missing.size() < files.size() ? "; this lab grades " + listed(files) + " together" : "");
}

namespace {

bool none_there(const fs::path& dir, const std::vector<std::string>& files) {
  std::error_code ignored;
  return std::all_of(files.begin(), files.end(), [&](const std::string& file) {
    return fs::symlink_status(dir / file, ignored).type() == fs::file_type::not_found;
  });
}

}  // namespace

std::vector<std::string> required_files(const LabSpec& lab, const fs::path& dir) {
  std::vector<std::string> required = lab.student_files;
  for (const ExtraModule& part : lab.modules) {
    if (!none_there(dir, part.files)) continue;
    for (const std::string& file : part.files) required.erase(std::find(required.begin(), required.end(), file));
  }
  return required;
}

std::string submission_problem(const fs::path& entry) {
  const std::string name = entry.filename().string();
  const std::string folder = name.substr(0, name.find('.', 1));  // alice.tar.gz: alice
  struct stat info {};
  if (::lstat(entry.c_str(), &info) != 0) {
    const std::string why = errno_text(errno);  // before anything else can change errno
    return "this submission cannot be read (" + why + ")";
  }
  if (S_ISDIR(info.st_mode)) return {};
  if (S_ISLNK(info.st_mode))
    return "this submission is a symbolic link, not a folder: links are never followed, so copy the folder "
           "itself in place of \"" + name + "\"";
  if (S_ISREG(info.st_mode))
    return "this submission is a file, not a folder: unpack \"" + name + "\" into a folder named \"" + folder +
           "\" in its place";
  return "this submission is " + kind_of(info.st_mode) + ", not a folder: put its files in a folder named \"" +
         folder + "\"";
}

fs::path first_symlink(const fs::path& base, const fs::path& relative) {
  fs::path at = base;
  for (const fs::path& part : relative) {
    at /= part;
    std::error_code ignored;
    if (fs::is_symlink(fs::symlink_status(at, ignored))) return at;
  }
  return {};
}

namespace {

bool holds_any(const fs::path& dir, const std::vector<std::string>& files) {
  std::error_code ignored;
  if (!fs::is_directory(fs::symlink_status(dir, ignored))) return false;
  for (const std::string& file : files)
    if (fs::symlink_status(dir / file, ignored).type() != fs::file_type::not_found) return true;
  return false;
}

// Whether dir's copies of the lab's files are the kit's starters, byte for byte: a clone of the
// kit keeps them in labs/NN-name/ while its owner's work may sit at the top. A file that cannot
// be taken (a link, a pipe) is never read, and is no starter.
bool unchanged_starter(const LabSpec& lab, const fs::path& dir) {
  if (lab.folder.empty()) return false;
  for (const std::string& file : lab.student_files)
    if (!student_file_problem(dir / file, file).empty() ||
        labkit::file_bytes((dir / file).string()) != labkit::file_bytes((fs::path(lab.folder) / file).string()))
      return false;
  return true;
}

}  // namespace

bool holds_all(const fs::path& dir, const std::vector<std::string>& files) {
  std::error_code ignored;
  if (!fs::is_directory(fs::symlink_status(dir, ignored))) return false;
  for (const std::string& file : files)
    if (fs::symlink_status(dir / file, ignored).type() == fs::file_type::not_found) return false;
  return true;
}

std::string find_student_dir(const LabSpec& lab, const std::string& base) {
  // A symbolic link below base is never looked through (it could lead to the kit's solutions).
  // A linked lab folder is returned only when no real folder holds the files, so that
  // build_lab refuses it by name instead of saying "not found"; then a real folder that holds
  // some of them, so that build_lab names the files missing there (a lab of several parts).
  // A copy that is the kit's starter, unchanged, is taken only when no other copy is there.
  std::string linked, partial, starter;
  for (const fs::path& relative : {fs::path("labs") / lab.dir, fs::path(lab.dir), fs::path()}) {
    const fs::path dir = fs::path(base) / relative;
    if (const fs::path link = first_symlink(base, relative); !link.empty()) {
      if (linked.empty()) linked = link.string();
    } else if (holds_all(dir, lab.student_files)) {
      if (!unchanged_starter(lab, dir)) return dir.string();
      if (starter.empty()) starter = dir.string();
    } else if (partial.empty() && holds_any(dir, lab.student_files)) {
      partial = dir.string();
    }
  }
  if (!starter.empty()) return starter;
  return linked.empty() ? partial : linked;
}

std::string copies_left_out(const LabSpec& lab, const std::string& base, const std::string& chosen) {
  std::string left_out;
  for (const fs::path& relative : {fs::path("labs") / lab.dir, fs::path(lab.dir), fs::path()}) {
    const fs::path dir = fs::path(base) / relative;
    if (dir.string() == chosen || !first_symlink(base, relative).empty() || !holds_all(dir, lab.student_files))
      continue;
    left_out += (left_out.empty() ? "" : " and ") + ("the copy in " + (relative.empty() ? "the top folder" : relative.string() + "/")) +
                (unchanged_starter(lab, dir) ? " (the kit's starter, unchanged)" : "");
  }
  if (left_out.empty()) return "";
  const fs::path graded = fs::relative(chosen, base);
  return "your submission holds more than one copy of " + lab.student_files.front() + ": graded the one in " +
         (graded == "." ? "the top folder" : graded.string() + "/") + ", left out " + left_out;
}

}  // namespace grade
