// Host-only statistics behind the timing rule and the grade: no GPU needed, so the
// stopping rule and the points curve are unit-tested in CI.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace labkit {

struct SampleSummary {
  std::size_t count = 0;
  double median = 0;
  double min = 0;
  double mean = 0;
  double stdev = 0;
  double relative_error = 0;  // standard error of the mean over the mean
  // The median's standard error (from the median absolute deviation) over the median: a few
  // wild samples, honest or planted, do not move it.
  double median_relative_error = 0;
};

SampleSummary summarize(std::vector<double> samples);

// The standard error of the samples' median, from their median absolute deviation: a few
// wild samples (a host hiccup) do not widen it.
double median_standard_error(std::vector<double> samples);

// A timed case's speed points as ratio_points gives them: what a stopping rule needs to know
// when more samples can no longer move them (points_known). No points: no such curve.
struct CreditCurve {
  double reference_ms = 0;
  double zero_credit_ratio = 0;
  double full_credit_ratio = 0;
  double points = 0;
};

// The points that two standard errors of a median either way may move, at most, for sampling
// to stop: a fifth of a point, twice the tenth that ratio_points resolves.
constexpr double points_resolution = 0.2;

struct StoppingRule {
  double target_relative_error = 0.005;  // stop once the statistic read is known to 0.5%...
  std::size_t min_samples = 10;          // ...but never on fewer samples than this
  std::size_t max_samples = 5000;
  double max_seconds = 2.0;  // wall-clock cap for one measurement, warm-up excluded
  // A call whose median after `min_samples_beyond` samples takes at least this long (0: no such
  // time) is far past where its case's speed credit ends: more samples cannot earn it a point.
  double beyond_credit_ms = 0;
  std::size_t min_samples_beyond = 3;
  // A call still running after this (0: none) is stopped and counts as this long: past
  // beyond_credit_ms it cannot earn a point, and waiting for it to end would only cost the
  // class's time. One such call is an outlier; a second ends the timing.
  double give_up_ms = 0;
  // The case's speed points: sampling also stops once they are known (points_known), as they
  // are far past full or zero credit, or where the curve is flat enough for the median's spread.
  CreditCurve credit;
};

// True when the points the median earns move by no more than points_resolution between two
// standard errors (the summary's relative_error) below it and two above.
bool points_known(const StoppingRule& rule, const SampleSummary& so_far);

// True when enough samples were taken, or a cap was reached.
bool should_stop(const StoppingRule& rule, const SampleSummary& so_far, double elapsed_seconds);

// True when the samples so far say the call earns no speed credit with a wide margin
// (StoppingRule::beyond_credit_ms): timing it further would only cost the class's time.
bool beyond_credit(const StoppingRule& rule, const SampleSummary& so_far);

// The time at which a call is beyond credit: twice the time of the zero-credit ratio, so that
// neither the ratio's benefit of the doubt (at most ratio_noise_cap) nor the slack of a report
// confirmed later (confirmation_slack_ms) brings it back into the points.
inline double beyond_credit_ms(double reference_ms, double zero_credit_ratio) {
  return zero_credit_ratio > 0 ? 2.0 * reference_ms / zero_credit_ratio : 0.0;
}

// When a call past beyond_credit_ms is stopped: twice that, and never before a second, so
// that one-time work an honest call may do at its first run (a library handle, a plan) is
// never cut.
inline double give_up_ms(double beyond_credit_ms) {
  return beyond_credit_ms > 0 ? std::max(2 * beyond_credit_ms, 1000.0) : 0.0;
}

// ---- a submission's timed samples (time_submission_call, labkit/timing.h) ----------------

// How far below our clock's bound a sample's report may be and still be confirmed: 10 us + 5%
// for the submission's own launch work, and as much again for the jitter of one sample's round
// trip (the median of an honest call's gap sits well inside it).
inline double confirmation_slack_ms(double reported_ms) { return 0.020 + 0.10 * reported_ms; }

// What one sample scores: the report, when it is a time our clock confirms (above zero, within
// the window, and no more than the slack below the bound); else the bound.
struct SampleClocks {
  double reported_ms = 0;  // what the submission's process said
  double window_ms = 0;    // our clock around the call
  double bound_ms = 0;     // the window less the empty call's overhead
};
bool report_is_a_time(const SampleClocks& clocks);
bool report_confirmed(const SampleClocks& clocks);
double sample_time(const SampleClocks& clocks);

// The most an empty call's overhead may count, from overheads measured while no process of the
// submission's existed: their median, plus two of their standard deviations (from the median
// absolute deviation) or 3% of the median, whichever is more, plus 10 us. Measured on an H100,
// the overheads with a submission's process alive have the same median or a lower one, so an
// honest sample seldom reaches the ceiling, while a submission that slows the empty call gains
// at most the margin. Infinite with that defence off.
double empty_call_ceiling_ms(const std::vector<double>& clean_overheads_ms);

// Points for a speed ratio (reference time / student time: 1.0 = as fast as the reference).
// Zero at or below zero_credit_ratio, full at or above full_credit_ratio, and between them in
// proportion to log(ratio / zero_credit_ratio): the same points for each doubling of speed.
// `noise` is the ratio's relative uncertainty: ratios within it of a threshold are read in
// the student's favour, so grading the same code again does not flip a verdict.
double ratio_points(double ratio, double zero_credit_ratio, double full_credit_ratio,
                    double max_points, double noise);

// Relative uncertainty of a ratio of two medians: combined standard errors with a floor for
// run-to-run drift that a single measurement cannot see, and a cap, so that no spread of a
// submission's samples, planted or honest, widens its benefit of the doubt beyond it.
constexpr double ratio_noise_floor = 0.03, ratio_noise_cap = 0.05;
double ratio_noise(double relative_error_a, double relative_error_b);

// The relative error of a submission's time that its ratio's noise may use: the median's (the
// robust-noise defence), or with that defence switched off, the mean's.
double noise_relative_error(const SampleSummary& submission);

// How well a submission's median needs to be known: three of its standard errors beside a
// reference known as well (3 * hypot(e, e)) fill the ratio's noise floor and no more. Sampling
// past it would narrow neither the ratio's benefit of the doubt nor its points.
inline double submission_target_relative_error() { return ratio_noise_floor / (3.0 * 1.4142135623730951); }

}  // namespace labkit
