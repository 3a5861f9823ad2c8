// The grader's scoring: what the runner reported (runner_client.h) turned into each case's
// outcome, points and message: the correctness share, the performance points with their
// floors (faster than memory or than the FP32 units is not credited), and what a lab that
// never ran scores.
#pragma once

#include "catalog.h"
#include "labkit/dataset.h"
#include "model.h"
#include "runner_client.h"

#include <string>

namespace grade {

// Each correctness case of the dataset: its record's outcome, or none with `run_problem` (why
// the run never reached it).
void score_correctness(const LabSpec& lab, const labkit::Dataset& dataset, const Reports& reports,
                       const std::string& run_problem, LabResult& result);

// Each performance case of the rubric: points by its speed ratio.
void score_performance(const LabSpec& lab, const Reports& reports, const std::string& run_problem,
                       LabResult& result);

// Scores a lab that never ran: every case at zero, with result.note as its message.
void score_unrun(const LabSpec& lab, LabResult& result);

}  // namespace grade
