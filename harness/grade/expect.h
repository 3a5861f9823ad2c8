// Expected verdicts: a submission folder may hold expected.yaml saying what grading it must
// give. The red-team corpus (grading/redteam/) is graded with --expect as a test of the kit,
// and an instructor can pin down a rubric the same way.
//
//   why: what this submission does, in a line
//   labs:
//     "01": {status: graded, correctness: some, points_at_most: 60, message: "counted twice"}
//
// status: a lab status as the report spells it ("graded", "build failed", "run failed"...);
// correctness: all, some or none of the correctness cases pass; message: text that must
// appear in the lab's note, build log or some case's message.
#pragma once

#include "model.h"

#include <string>
#include <vector>

namespace grade {

struct ExpectationCheck {
  std::size_t checked = 0;     // labs whose expectation was checked
  std::size_t needs_gpu = 0;   // labs that could not run here, so were not checked
  std::vector<std::string> mismatches;
};

// Checks each report against expected.yaml in its submission folder (`base_dir/<who>/`).
ExpectationCheck check_expectations(const std::vector<Report>& reports, const std::string& base_dir);

}  // namespace grade
