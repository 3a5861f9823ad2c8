// Expected verdicts: a submission folder may hold expected.yaml saying what grading it must
// give. The red-team corpus (grading/redteam/) is graded with --expect as a test of the kit,
// and an instructor can pin down a rubric the same way.
//
//   why: what this submission does, in a line
//   labs:
//     "01": {status: graded, correctness: some, points_at_most: 60, message: "counted twice"}
//
// honest: true: a twin that does honestly what an attack beside it does with a trick.
// undefended: {defences: [NAME, ...], why: ..., labs: {...}}: for an attack, the defences
// (labkit/defences.h) whose switching-off must let it win, and what it must then get;
// `--expect --undefended` grades each such entry with those defences off and checks this
// block, so an entry that attacks nothing fails.
// files: starter (or reference): grade the kit's own starters (or reference solutions) under
// this entry's name instead of files of its own, so that the entry tests today's code and never
// a stale copy; files: {NAME: reference, ...}: its own files, with those named taken from the
// kit (the parts of a lab it does not attack): `starter`, `reference`, `chapter` (the
// recorded chapter version under grading/policy/chapter/) or `step NAME` (a recorded step
// under grading/policy/steps/NN-name/NAME/).
// status: a lab status as the report spells it ("graded", "build failed", "run failed"...);
// correctness: all, some or none of the correctness cases pass; message: text that must
// appear in the lab's note, build log or some case's message.
#pragma once

#include "batch.h"
#include "model.h"

#include <map>
#include <string>
#include <vector>

namespace grade {

struct ExpectationCheck {
  std::size_t checked = 0;     // labs whose expectation was checked
  std::size_t needs_gpu = 0;   // labs that could not run here, so were not checked
  std::vector<std::string> mismatches;
  // What would let the check pass while checking nothing: a submission without expected.yaml,
  // a file that names no lab, or a lab key the grader does not know ("1" for "01").
  std::vector<std::string> errors;
};

// Points each submission whose expected.yaml says `files: starter` or `files: reference` at
// the kit's files (under `source_root`). One that says `files: {NAME: starter, ...}` hands in
// its own files and takes the named ones from the kit (a part it does not attack): both are
// copied into `staging/<who>/`, which it is then graded from. Throws BadInput on any other
// value, or a NAME no lab of the kit has.
void use_kit_files(std::vector<Submission>& submissions, const std::string& source_root,
                   const std::string& staging);

// What in one expected.yaml would let its check pass while checking nothing, as errors: its
// `labs:` names no lab, or a lab outside `known_labs` (every lab id of the catalog), or, for an
// entry that hands in the kit's own files of every lab (`files: starter` or `files: reference`),
// leaves out a lab of the catalog, which would then go unchecked. Empty when there is none.
std::vector<std::string> expectation_problems(const std::string& expected_file,
                                              const std::vector<std::string>& known_labs);

// Checks each report against expected.yaml in its submission folder (`base_dir/<who>/`): its
// `labs:`, or with `undefended` its `undefended: labs:`. `known_labs`: every lab id of the
// catalog ("01"...); a key outside it is an error (as is the rest of expectation_problems), a
// known lab that was not graded in this run is left out.
ExpectationCheck check_expectations(const std::vector<Report>& reports, const std::string& base_dir,
                                    const std::vector<std::string>& known_labs, bool undefended = false);

// Merges `more` into `into`.
void add_check(ExpectationCheck& into, const ExpectationCheck& more);

// The submissions of a red-team folder grouped by the defences their `undefended:` block
// switches off (the names sorted and joined by ','), for `--expect --undefended`. An entry with
// neither that block nor `honest: true` is an error in `problems` (its attack would go
// unproven); an unknown defence name throws BadInput.
std::map<std::string, std::vector<Submission>> group_by_undefended(const std::vector<Submission>& submissions,
                                                                   std::vector<std::string>& problems);

}  // namespace grade
