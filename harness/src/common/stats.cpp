#include "labkit/stats.h"

#include "labkit/defences.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace labkit {

namespace {

double median_of_sorted(const std::vector<double>& sorted) {
  const std::size_t mid = sorted.size() / 2;
  return sorted.size() % 2 ? sorted[mid] : 0.5 * (sorted[mid - 1] + sorted[mid]);
}

double median_of(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  return median_of_sorted(samples);
}

}  // namespace

SampleSummary summarize(std::vector<double> samples) {
  SampleSummary s;
  s.count = samples.size();
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  s.median = median_of_sorted(samples);
  s.min = samples.front();
  s.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / double(s.count);
  if (s.count > 1) {
    double squares = 0;
    for (double x : samples) squares += (x - s.mean) * (x - s.mean);
    s.stdev = std::sqrt(squares / double(s.count - 1));
    s.relative_error = s.mean > 0 ? s.stdev / std::sqrt(double(s.count)) / s.mean : 0;
    s.median_relative_error = s.median > 0 ? median_standard_error(samples) / s.median : 0;
  }
  return s;
}

double median_standard_error(std::vector<double> samples) {
  if (samples.size() < 2) return 0;
  const double median = median_of(samples);
  for (double& x : samples) x = std::fabs(x - median);
  const double sigma = 1.4826 * median_of(samples);  // MAD to a normal's sigma
  return 1.2533 * sigma / std::sqrt(double(samples.size()));  // the median's efficiency
}

bool should_stop(const StoppingRule& rule, const SampleSummary& so_far, double elapsed_seconds) {
  if (so_far.count >= rule.max_samples) return true;
  if (so_far.count < rule.min_samples) return false;
  return so_far.relative_error <= rule.target_relative_error || points_known(rule, so_far) ||
         elapsed_seconds >= rule.max_seconds;
}

bool points_known(const StoppingRule& rule, const SampleSummary& so_far) {
  const CreditCurve& curve = rule.credit;
  if (curve.points <= 0 || !(so_far.median > 0)) return false;
  const double ratio = curve.reference_ms / so_far.median, spread = 1 + 2 * so_far.relative_error;
  auto points = [&](double at) {
    return ratio_points(at, curve.zero_credit_ratio, curve.full_credit_ratio, curve.points, ratio_noise_floor);
  };
  return points(ratio * spread) - points(ratio / spread) <= points_resolution + 1e-9;
}

bool beyond_credit(const StoppingRule& rule, const SampleSummary& so_far) {
  return rule.beyond_credit_ms > 0 && so_far.count >= rule.min_samples_beyond && so_far.median >= rule.beyond_credit_ms;
}

double ratio_noise(double relative_error_a, double relative_error_b) {
  // Three standard errors of the ratio, and never less than 3%: the same binary timed in two
  // separate runs moves by about that much on a shared, boost-clocked GPU. Never more than 5%:
  // beyond that the spread says more about the samples than about the GPU.
  const double noise = std::max(ratio_noise_floor, 3.0 * std::hypot(relative_error_a, relative_error_b));
  return defence_enabled(Defence::robust_noise) ? std::min(noise, ratio_noise_cap) : noise;
}

double noise_relative_error(const SampleSummary& submission) {
  return defence_enabled(Defence::robust_noise) ? submission.median_relative_error : submission.relative_error;
}

bool report_is_a_time(const SampleClocks& clocks) {
  return std::isfinite(clocks.reported_ms) && clocks.reported_ms > 0 && clocks.reported_ms <= clocks.window_ms;
}

bool report_confirmed(const SampleClocks& clocks) {
  return report_is_a_time(clocks) &&
         clocks.reported_ms >= clocks.bound_ms - confirmation_slack_ms(clocks.reported_ms);
}

double sample_time(const SampleClocks& clocks) {
  if (!defence_enabled(Defence::sample_confirmation)) return clocks.reported_ms;
  return report_confirmed(clocks) ? clocks.reported_ms : clocks.bound_ms;
}

double empty_call_ceiling_ms(const std::vector<double>& clean_overheads_ms) {
  if (!defence_enabled(Defence::empty_call_ceiling) || clean_overheads_ms.empty())
    return std::numeric_limits<double>::infinity();
  const SampleSummary clean = summarize(clean_overheads_ms);
  const double sigma = median_standard_error(clean_overheads_ms) * std::sqrt(double(clean.count)) / 1.2533;
  return clean.median + std::max(2 * sigma, 0.03 * clean.median) + 0.010;
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
