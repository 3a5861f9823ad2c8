// The grading policy's records (grading/policy/README.md): each lab's unchanged starter, its
// chapter's technique done right and its reference solution, graded once on a GPU and kept as
// what the grader saved (grading/policy/h100/<tier>/<lab>.json). Scored again under the lab's
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

// The recorded run scored under the lab's rubric and dataset as they are now: each case's
// outcome and measurement as recorded, its points from today's thresholds.
LabResult rescored(const LabSpec& lab, const LabResult& recorded);

}  // namespace grade::policy
