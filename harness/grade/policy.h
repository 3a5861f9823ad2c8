// The grading policy's records (grading/policy/README.md): each lab's unchanged starter, its
// chapter's technique done right and its reference solution, graded once on a GPU and kept as
// what the grader saved (grading/policy/h100/<tier>/<lab>.json); and the steps that
// versions.yaml lists for a lab (the planted bug fixed alone, the library baseline, each
// intermediate step its README teaches), kept the same way in
// grading/policy/h100/steps/<NN-name>/<step>.json. Scored again under the lab's
// rubric as it is now, they are the one source of every "what each version earns" figure: the
// policy test holds the rubrics to the rule with them, and `grade docs` renders the READMEs'
// tables from them.
#pragma once

#include "catalog.h"
#include "model.h"

#include <array>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace grade::policy {

inline constexpr std::array<const char*, 3> tiers = {"starter", "chapter", "reference"};

// Where the records live, relative to the kit's root, and one tier's record of a lab.
inline constexpr const char* records_folder = "grading/policy/h100";
std::filesystem::path record_path(const std::string& source_root, const std::string& tier, const LabSpec& lab);

// The recorded run, or nothing where it was never recorded (a lab whose machine was not lent).
std::optional<LabResult> recorded_run(const std::string& source_root, const std::string& tier, const LabSpec& lab);

// Why the record no longer fits the lab's dataset (its correctness cases differ), naming the
// command that records it again; "" when it fits.
std::string record_mismatch(const LabSpec& lab, const LabResult& recorded);

// The dataset's correctness cases the record lacks, where it holds no case the dataset has
// dropped: a part added since the record, whose cases wait for a GPU to record them (the policy
// test warns, and the READMEs' tables say "not recorded"). Empty where the record fits, or
// where it differs some other way (then record_mismatch is the failure to report).
std::vector<std::string> cases_awaiting_record(const LabSpec& lab, const LabResult& recorded);

// ---- Steps

// Where each lab's tables name its versions and list its steps (words, no numbers), and where
// each step's files live (steps/<NN-name>/<step>/, laid out as one student's files of that lab).
inline constexpr const char* versions_file = "grading/policy/versions.yaml";
inline constexpr const char* steps_folder = "grading/policy/steps";

// What a step must earn, by its `rule:` in versions.yaml. Every step earns more than the
// starter's cap (30) and the starter's recorded points.
//   bug-fixed  the starter with its planted bug or flaw fixed and nothing else: less than the
//              chapter tier; the first rung of the lab's rising steps
//   library    the library baseline, where the lab allows a library: less than the chapter tier
//   step       an intermediate step the README teaches: more than the rung before it (the
//              bug-fixed or step listed before it, else the starter), at most the chapter tier
//   chapter    the chapter's technique in another form (another block size, memory kept across
//              calls, the README's next digit width): what the chapter tier may earn (70-85)
//   unranked   a step that this GPU does not reward in the lesson's order (its caches make up for
//              what the step saves, or the library outruns the chapter's own kernel): at most
//              the reference; its `why:` in versions.yaml says why, in one sentence
inline constexpr std::array<const char*, 5> step_rules = {"bug-fixed", "library", "step", "chapter", "unranked"};

struct Step {
  std::string slug;  // its folder's name under steps/<NN-name>/, and its record's
  std::string name;  // one line for the tables
  std::string rule;  // one of step_rules
  std::string why;   // unranked: why this GPU does not rank the step where the lesson would
};

// The lab's steps in versions.yaml's order (none when it lists none). Throws BadInput on an
// entry without `step:`, `name:` or a known `rule:`.
std::vector<Step> steps_of(const std::string& source_root, const LabSpec& lab);

// A step's files, and its record (nothing where it was never recorded).
std::filesystem::path step_folder(const std::string& source_root, const LabSpec& lab, const Step& step);
std::filesystem::path step_record_path(const std::string& source_root, const LabSpec& lab, const Step& step);
std::optional<LabResult> recorded_step(const std::string& source_root, const LabSpec& lab, const Step& step);

// The recorded run scored under the lab's rubric and dataset as they are now: each case's
// outcome and measurement as recorded, its points from today's thresholds.
LabResult rescored(const LabSpec& lab, const LabResult& recorded);

}  // namespace grade::policy
