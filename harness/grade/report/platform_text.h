// What the course platforms' per-case files (Gradescope's and PrairieLearn's results.json)
// show a student: a case's name and details, the lab's points, note and compiler messages.
#pragma once

#include "model.h"

#include <string>

namespace grade {

// A case's name on a platform's page: its kind first, as a correctness and a timed case may
// share a name ("uniform-100MiB"), and the platforms list tests by name.
std::string test_name(const CaseResult& c);

// A case's details as a student may see them: the hint, or the timing and its note.
std::string case_output(const CaseResult& c);

// The lab's points and note, then the compiler's messages, cut to a sane length, when there are any.
std::string lab_output(const LabResult& lab);

}  // namespace grade
