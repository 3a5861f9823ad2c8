// compute-sanitizer on a lab's failing cases: which cases, and the runner again on them with
// the submission's host under each of the lab's tools (the findings: sanitize.h).
#pragma once

#include "job.h"
#include "labkit/dataset.h"
#include "model.h"
#include "progress.h"
#include "runner_client.h"

#include <string>
#include <vector>

namespace grade {

// The failing correctness cases (at most a few), or with `always` the first cases when none fails;
// never a case that runs in MPI ranks, which the tools (wrapping the host) cannot see.
std::vector<std::string> cases_to_sanitize(const LabResult& result, const labkit::Dataset& dataset, SanitizeWhen when);

// Each of the lab's tools on `cases`; what a tool says of itself is never the student's.
std::vector<SanitizerRun> sanitize_lab(const RunContext& context, const std::vector<std::string>& cases,
                                       LiveLine& live);

}  // namespace grade
