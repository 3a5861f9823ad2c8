#include "labkit/stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace labkit {

SampleSummary summarize(std::vector<double> samples) {
  SampleSummary s;
  s.count = samples.size();
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  const std::size_t mid = s.count / 2;
  s.median = s.count % 2 ? samples[mid] : 0.5 * (samples[mid - 1] + samples[mid]);
  s.min = samples.front();
  s.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / double(s.count);
  if (s.count > 1) {
    double squares = 0;
    for (double x : samples) squares += (x - s.mean) * (x - s.mean);
    s.stdev = std::sqrt(squares / double(s.count - 1));
    s.relative_error = s.mean > 0 ? s.stdev / std::sqrt(double(s.count)) / s.mean : 0;
  }
  return s;
}

double median_standard_error(std::vector<double> samples) {
  if (samples.size() < 2) return 0;
  const double median = summarize(samples).median;
  for (double& x : samples) x = std::fabs(x - median);
  const double sigma = 1.4826 * summarize(samples).median;  // MAD to a normal's sigma
  return 1.2533 * sigma / std::sqrt(double(samples.size()));  // the median's efficiency
}

bool should_stop(const StoppingRule& rule, const SampleSummary& so_far, double elapsed_seconds) {
  if (so_far.count >= rule.max_samples) return true;
  if (so_far.count < rule.min_samples) return false;
  return so_far.relative_error <= rule.target_relative_error || elapsed_seconds >= rule.max_seconds;
}

double ratio_noise(double relative_error_a, double relative_error_b) {
  // Three standard errors of the ratio, and never less than 3%: the same binary timed in two
  // separate runs moves by about that much on a shared, boost-clocked GPU.
  const double combined = std::hypot(relative_error_a, relative_error_b);
  return std::max(0.03, 3.0 * combined);
}

double ratio_points(double ratio, double zero_credit_ratio, double full_credit_ratio,
                    double max_points, double noise) {
  if (!(ratio > 0) || max_points <= 0) return 0;
  const double generous = ratio * (1.0 + noise);  // the benefit of the doubt
  if (generous >= full_credit_ratio) return max_points;
  if (generous <= zero_credit_ratio) return 0;
  // On the logarithm of the ratio: each doubling of speed earns the same points, so a kernel
  // ten times slower than the reference still earns for being ten times faster than one a
  // hundred times slower (a linear scale gives both next to nothing).
  const double fraction = std::log(generous / zero_credit_ratio) / std::log(full_credit_ratio / zero_credit_ratio);
  // Whole tenths of a point: noise below that cannot change a score.
  return std::floor(fraction * max_points * 10.0) / 10.0;
}

}  // namespace labkit
