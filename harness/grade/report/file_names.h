// The names of a batch's per-student files (students/WHO.json, handout/WHO.html, ...).
#pragma once

#include "model.h"

#include <string>
#include <vector>

namespace grade {

// The file name (without extension) of each report's files: the folder's name where it is
// plain ASCII (letters, digits, . _ -), else a slug of it ("dave smith" -> dave-smith,
// "José Núñez" -> Jose-Nunez); unique, ignoring case. A plain-ASCII name is kept whatever
// the order: a slug that would clash with it gets "-2".
std::vector<std::string> report_file_names(const std::vector<Report>& reports);

}  // namespace grade
