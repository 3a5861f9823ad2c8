// Host-only statistics behind the timing rule and the grade: no GPU needed, so the
// stopping rule and the points curve are unit-tested in CI.
#pragma once

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
};

SampleSummary summarize(std::vector<double> samples);

// The standard error of the samples' median, from their median absolute deviation: a few
// wild samples (a host hiccup) do not widen it.
double median_standard_error(std::vector<double> samples);

struct StoppingRule {
  double target_relative_error = 0.005;  // stop once the mean is known to 0.5%...
  std::size_t min_samples = 10;          // ...but never on fewer samples than this
  std::size_t max_samples = 5000;
  double max_seconds = 2.0;  // wall-clock cap for one measurement, warm-up excluded
};

// True when enough samples were taken, or a cap was reached.
bool should_stop(const StoppingRule& rule, const SampleSummary& so_far, double elapsed_seconds);

// Points for a speed ratio (reference time / student time: 1.0 = as fast as the reference).
// Zero at or below zero_credit_ratio, full at or above full_credit_ratio, and between them in
// proportion to log(ratio / zero_credit_ratio): the same points for each doubling of speed.
// `noise` is the ratio's relative uncertainty: ratios within it of a threshold are read in
// the student's favour, so grading the same code again does not flip a verdict.
double ratio_points(double ratio, double zero_credit_ratio, double full_credit_ratio,
                    double max_points, double noise);

// Relative uncertainty of a ratio of two medians: combined standard errors with a floor
// for run-to-run drift that a single measurement cannot see.
double ratio_noise(double relative_error_a, double relative_error_b);

}  // namespace labkit
