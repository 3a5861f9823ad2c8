// The grader's timing and input defences, each with a name, so that the red team can prove an
// entry attacks something: `grade ... --disable-defences NAME,...` (or, for a runner started by
// hand, LABKIT_DISABLE_DEFENCES) switches the named ones off for that run, the report says so
// on every lab, and an entry's `undefended:` expectation must then hold (grading/redteam/).
// Never for grading: a run with a defence off is a test of the kit.
#pragma once

#include <string>
#include <vector>

namespace labkit {

enum class Defence {
  sample_confirmation,  // each reported time checked against the grader's clock, sample by sample
  robust_noise,         // the ratio's benefit of the doubt from robust statistics, capped
  empty_call_ceiling,   // the empty call's overhead capped by one measured with no submission process
  process_isolation,    // the submission's processes see and signal nothing outside their own
  fresh_inputs,         // every timed call reads an input drawn afresh
  varied_inputs,        // "all the same" timed inputs hold a few other values at fresh positions
  context_count,        // a CUDA context of the submission's own fails the call
};

// Every defence, with the name the flag and expected.yaml use ("sample-confirmation"...).
const std::vector<std::pair<Defence, const char*>>& defence_names();
std::string to_string(Defence defence);
// Throws std::invalid_argument naming the known ones.
Defence parse_defence(const std::string& name);

// In the runner and its hosts: false only when the run was started with this defence off.
bool defence_enabled(Defence defence);

namespace env {
// The comma-separated names of the defences a kit-test run switches off.
constexpr const char* disabled_defences = "LABKIT_DISABLE_DEFENCES";
}  // namespace env

}  // namespace labkit
