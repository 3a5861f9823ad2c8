#include "score.h"

#include "labkit/protocol.h"
#include "labkit/stats.h"

#include <cstdio>

using nlohmann::json;

namespace grade {

namespace protocol = labkit::protocol;

namespace {

double correctness_share(const LabSpec& lab, std::size_t case_count) {
  return case_count == 0 ? 0 : lab.correctness_points / double(case_count);
}

// The timing floor: no honest implementation reads its input faster than the measured
// bandwidth allows; 10% over it leaves room for measurement noise.
bool faster_than_memory(const json& record) {
  const double peak = record.value("peak_read_gbps", 0.0);
  return peak > 0 && record["student"].value("gbps", 0.0) > 1.10 * peak;
}

// The compute floor: no kernel does a case's floating-point operations faster than every
// unit that can do them (the FP32 lanes, or the tensor cores for BF16) at the GPU's highest
// clock; 5% over it leaves room for clock rounding.
bool faster_than_compute(const json& record) {
  const double flops = record.value("flops", 0.0), peak_gflops = labkit::protocol::compute_peak(record).gflops;
  const double ms = record["student"].value("median_ms", 0.0);
  return flops > 0 && peak_gflops > 0 && ms > 0 && flops / (ms * 1e6) > 1.05 * peak_gflops;
}

// When most samples' empty calls ran past their kept ceiling, the bound holds that excess too
// (lab 03's managed cases on some machines: docs/grader-measurements.md), so the clock's figure
// may be the grader's own overhead rather than the call's; the student is told so.
std::string empty_calls_past_ceiling(const json& student) {
  const std::size_t ceiled = student.value("ceiled_empty_calls", std::size_t(0));
  const std::size_t samples = student.value("samples", std::size_t(0));
  if (samples == 0 || 2 * ceiled <= samples) return "";
  return ". In " + std::to_string(ceiled) + " of " + std::to_string(samples) +
         " samples the grader's own empty call (its measure of a window's overhead) ran past the ceiling kept "
         "for this machine, lengthening the bound by that excess: either the empty calls here run slower "
         "beside your process than the ceiling's did with none alive, and an honest report then scores the "
         "bound too, or work of your process's ran while the grader measured its empty call";
}

// The submission's process reported times our clock cannot back, in most samples: work hidden
// on another stream, host work inside the call, or a forged event time. The bound from our
// clock is what those samples scored. Honest code meets it most often by allocating in every
// call (cudaMalloc, or cudaMallocAsync, whose pool gives its memory back whenever the device
// synchronises, as the grader's does between samples).
std::string unconfirmed_message(const json& student) {
  char text[600];
  std::snprintf(text, sizeof text,
                "your process reported %.4f ms, but the grader's clock saw at least %.4f ms of work per call "
                "(work outside the stream passed in; host work inside the call, most often memory allocated "
                "and freed in every call: cudaMalloc, or cudaMallocAsync, whose pool gives its memory back "
                "whenever the device synchronises: allocate once and keep it; or a time that was not "
                "measured): timed by the grader's clock",
                student.value("reported_ms", 0.0), student.value("median_ms", 0.0));
  return text + empty_calls_past_ceiling(student);
}

// Timed calls stopped at the timing loop's limit (StoppingRule::give_up_ms): slow, not hung.
std::string stopped_message(const json& student) {
  char text[300];
  std::snprintf(text, sizeof text,
                "a call still running after %.1f s, far past the time where this case's speed credit ends, was "
                "stopped there and counted as that long (slow, not hung; a second such call ends the timing)",
                student.value("stopped_after_ms", 0.0) / 1e3);
  return text;
}

// Reports that no honest process sends (negative, zero, longer than the grader's window around
// the call): each such sample scored the grader's bound instead, whatever the rest said.
std::string impossible_message(const json& student) {
  return std::to_string(student.value("impossible_samples", 0)) + " of " + std::to_string(student.value("samples", 0)) +
         " times your process reported were no time at all (negative, zero, or longer than the grader's window "
         "around the call): those samples were timed by the grader's clock";
}

}  // namespace

void score_correctness(const LabSpec& lab, const labkit::Dataset& dataset, const Reports& reports,
                       const std::string& run_problem, LabResult& result) {
  const double share = correctness_share(lab, dataset.correctness.size());
  for (const labkit::Case& c : dataset.correctness) {
    CaseResult cr{c.name, "correctness", c.hidden};
    cr.max_points = share;
    const auto found = reports.correctness.find(c.name);
    const std::size_t count = found == reports.correctness.end() ? 0 : found->second.size();
    if (count == 0) {
      // Not run when the run (or the build) says why; a case missing from a run that finished
      // is a fault of the checks, and never passes.
      cr.outcome = run_problem.empty() ? Outcome::failed : Outcome::not_run;
      cr.message = "no result: " + (run_problem.empty() ? "the checks never reached this case" : run_problem);
    } else if (count > 1) {
      cr.outcome = Outcome::failed;
      cr.message = "reported " + std::to_string(count) + " times: results not trusted";
    } else {
      cr.outcome = found->second[0].outcome;
      cr.message = found->second[0].message;
    }
    cr.points = cr.passed() ? share : 0;
    result.cases.push_back(cr);
  }
}

void score_performance(const LabSpec& lab, const Reports& reports, const std::string& run_problem,
                       LabResult& result) {
  for (const PerformanceRubric& rubric : lab.performance) {
    CaseResult cr{rubric.case_name, "performance"};
    cr.max_points = rubric.points;
    const auto found = reports.performance.find(rubric.case_name);
    if (found == reports.performance.end() || found->second.size() != 1) {
      const bool missing = found == reports.performance.end();
      cr.outcome = missing ? Outcome::not_run : Outcome::failed;
      cr.message = missing ? "no result: " + (run_problem.empty() ? "not measured" : run_problem)
                           : "reported more than once: results not trusted";
      result.cases.push_back(cr);
      continue;
    }
    const protocol::PerformanceRecord& reported = found->second[0];
    if (reported.outcome == Outcome::not_run) {  // not timed: a correctness case failed, or no MPI
      cr.message = reported.message;
      result.cases.push_back(cr);
      continue;
    }
    const json& record = reported.measurement;
    cr.timing = record;
    const bool timed = reported.outcome == Outcome::passed && record.contains("ratio");
    cr.outcome = timed ? Outcome::passed : reported.outcome == Outcome::hung ? Outcome::hung : Outcome::failed;
    if (!timed) {
      cr.message = "output wrong after timing, so no speed credit: " + reported.message;
    } else {
      const json& student = record["student"];
      const double noise =
          labkit::ratio_noise(student.value("noise_relative_error", student.value("relative_error", 0.0)),
                              record["reference"].value("relative_error", 0.0));
      cr.points = labkit::ratio_points(record["ratio"].get<double>(), rubric.zero_credit_ratio,
                                       rubric.full_credit_ratio, rubric.points, noise);
      // What our clock said of the reports, unless a floor or the lesson says more below.
      if (student.value("stopped_after_ms", 0.0) > 0)
        cr.message = stopped_message(student);
      else if (!student.value("confirmed", true))
        cr.message = unconfirmed_message(student);
      else if (student.value("impossible_samples", 0) > 0)
        cr.message = impossible_message(student);
      if (const std::string missing = record.value("lesson_missing", ""); !missing.empty()) {
        cr.points = 0;
        cr.outcome = Outcome::failed;
        cr.message = "correct, but no speed credit: " + missing;
      } else if (faster_than_memory(record)) {
        cr.points = 0;
        cr.outcome = Outcome::failed;
        cr.message = "faster than this GPU's memory can deliver the bytes the task must read: not credited "
                     "(is work skipped, or an earlier answer reused?)";
      } else if (faster_than_compute(record)) {
        cr.points = 0;
        cr.outcome = Outcome::failed;
        cr.message = "faster than this GPU's " + labkit::protocol::compute_peak(record).name +
                     " allows for the task's arithmetic: not credited (is work skipped, or done where the "
                     "grader's clock was not looking?)";
      }
      // The lab's own advice on a slow time (measure_performance's hint), after ours.
      if (const std::string hint = record.value("hint", ""); !hint.empty())
        cr.message += (cr.message.empty() ? "" : "; ") + ("hint: " + hint);
    }
    result.cases.push_back(cr);
  }
}

// Scores a lab that never ran: every case at zero, with the reason as its message.
void score_unrun(const LabSpec& lab, LabResult& result) {
  score_correctness(lab, labkit::load_dataset(lab.dataset), {}, result.note, result);
  score_performance(lab, {}, result.note, result);
  add_totals(result);
}

}  // namespace grade
