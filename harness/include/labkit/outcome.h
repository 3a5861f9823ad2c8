// How one case of a lab ended: part of the grader-runner protocol (labkit/protocol.h), kept
// apart so that the submission's process's failures (labkit/remote.h) can carry it without
// the JSON the protocol needs.
#pragma once

#include <optional>
#include <string>

namespace labkit::protocol {

enum class Outcome {
  passed,
  failed,
  not_run,  // could not run here (no MPI, earlier calls hung...): the message says why; never a failure
  hung,     // the submission's call never returned and was stopped
};

const char* to_string(Outcome outcome);  // "passed", "failed", "not run", "hung"
std::optional<Outcome> outcome_from_string(const std::string& text);
inline bool is_failure(Outcome outcome) { return outcome == Outcome::failed || outcome == Outcome::hung; }

}  // namespace labkit::protocol
