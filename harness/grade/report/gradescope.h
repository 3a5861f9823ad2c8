// Gradescope: per lab, a scores CSV for its score import, and per student the results.json a
// Gradescope autograder writes (a course posts each lab as an assignment of its own).
#pragma once

#include "catalog.h"
#include "model.h"
#include "report/report_writer.h"
#include "roster.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace grade {

// Gradescope's autograder results.json for one submission's lab: a test per case named by
// kind and case ("performance: uniform-100MiB"; hidden cases hidden), their maxima in
// hundredths adding up to the lab's maximum, their scores to the lab's points, which is the
// score. The output gives the lab's points and note and the compiler's messages, cut to a
// sane length. None where the lab was not judged here: Gradescope has no "not graded", and an
// autograder that finds no file gives no score rather than a 0.
std::optional<nlohmann::json> gradescope_results(const Report& report, const LabSpec& lab);

// Scores for Gradescope's score import into one lab's assignment: Name, SID, Email, Total
// Score (the lab's points; blank where it was not judged here).
std::string gradescope_scores_csv(const std::vector<Report>& reports, const LabSpec& lab, const Roster& roster);

// A batch's gradescope-scores/LAB.csv and gradescope/LAB/WHO/results.json.
class GradescopeWriter final : public ReportWriter {
 public:
  void write_batch(const BatchOutput& batch) override;
  std::vector<BatchFile> batch_files() const override { return {{"gradescope-scores/LAB.csv", BatchFile::For::platforms}, {"gradescope/LAB/", BatchFile::For::platforms}}; }
};

}  // namespace grade
