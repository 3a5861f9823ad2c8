#include "labkit/stats.h"

#include <doctest/doctest.h>

#include <cmath>

TEST_SUITE("stats") {
  TEST_CASE("summary of a known sample") {
    const auto s = labkit::summarize({4, 1, 3, 2});
    CHECK(s.count == 4);
    CHECK(s.median == doctest::Approx(2.5));
    CHECK(s.min == 1);
    CHECK(s.mean == doctest::Approx(2.5));
    CHECK(s.stdev == doctest::Approx(std::sqrt(5.0 / 3.0)));
    CHECK(s.relative_error == doctest::Approx(std::sqrt(5.0 / 3.0) / 2.0 / 2.5));
  }

  TEST_CASE("the median's standard error shrinks with more samples and ignores a few wild ones") {
    std::vector<double> jitter;
    for (int i = 0; i < 16; ++i) jitter.push_back(i % 2 ? 1.0 : -1.0);  // MAD 1: sigma 1.4826
    const double sixteen = labkit::median_standard_error(jitter);
    CHECK(sixteen == doctest::Approx(1.2533 * 1.4826 / 4));
    for (int i = 0; i < 48; ++i) jitter.push_back(i % 2 ? 1.0 : -1.0);
    CHECK(labkit::median_standard_error(jitter) == doctest::Approx(sixteen / 2));
    jitter[0] = -1e6;  // wild samples, one on each side
    jitter[1] = 1e6;
    CHECK(labkit::median_standard_error(jitter) == doctest::Approx(sixteen / 2));
    CHECK(labkit::median_standard_error({3.0}) == 0);
  }

  TEST_CASE("stopping rule: at least the minimum, then until 0.5% or a cap") {
    const labkit::StoppingRule rule;  // 0.5%, 10 samples, 2 s
    std::vector<double> steady(5, 1.0);
    CHECK_FALSE(labkit::should_stop(rule, labkit::summarize(steady), 0.1));  // too few
    steady.resize(10, 1.0);
    CHECK(labkit::should_stop(rule, labkit::summarize(steady), 0.1));  // no spread at all

    std::vector<double> noisy;
    for (int i = 0; i < 10; ++i) noisy.push_back(i % 2 ? 1.0 : 1.2);  // about 3% error
    CHECK_FALSE(labkit::should_stop(rule, labkit::summarize(noisy), 0.1));
    CHECK(labkit::should_stop(rule, labkit::summarize(noisy), 5.0));  // time cap
    for (int i = 0; i < 400; ++i) noisy.push_back(i % 2 ? 1.0 : 1.2);  // error shrinks as 1/sqrt(n)
    CHECK(labkit::should_stop(rule, labkit::summarize(noisy), 0.1));
  }

  TEST_CASE("a submission is sampled until its median fills the noise floor, no further") {
    // Known to its target beside a reference known as well, the ratio's noise is its floor:
    // the benefit of the doubt that more samples would not narrow.
    const double target = labkit::submission_target_relative_error();
    CHECK(labkit::ratio_noise(target, target) == doctest::Approx(labkit::ratio_noise_floor));
    CHECK(labkit::ratio_noise(1.5 * target, 1.5 * target) > labkit::ratio_noise_floor);
    CHECK(target > labkit::StoppingRule{}.target_relative_error);  // looser than the reference's own rule
  }

  TEST_CASE("sampling stops once more samples cannot move the points") {
    // Reference 1 ms; a wide curve: no points at a ratio of 0.005, all 10 at 0.85.
    labkit::StoppingRule rule;
    rule.credit = {1.0, 0.005, 0.85, 10};
    auto noisy = [](double median, int count) {  // about 1.7% standard error
      std::vector<double> samples;
      for (int i = 0; i < count; ++i) samples.push_back(median * (i % 2 ? 0.95 : 1.05));
      return labkit::summarize(samples);
    };
    const labkit::SampleSummary slow = noisy(10.0, 10), fast = noisy(1.0, 10);
    CHECK(slow.relative_error > rule.target_relative_error);  // the 0.5% target alone would go on
    // At a ratio of 0.1 the curve rises 10 / log(170) = 1.95 points per unit of log(ratio): two
    // standard errors of 1.7% either way move them by about 0.13.
    CHECK(labkit::points_known(rule, slow));
    CHECK(labkit::should_stop(rule, slow, 0.1));
    CHECK(labkit::points_known(rule, fast));  // ratio 1: full credit whatever the spread
    // Where the curve is steep (20 points between 0.5 and 0.9) the same spread is not enough.
    labkit::StoppingRule steep;
    steep.credit = {1.0, 0.5, 0.9, 20};
    CHECK_FALSE(labkit::points_known(steep, noisy(1.4, 10)));
    CHECK_FALSE(labkit::points_known(labkit::StoppingRule{}, slow));  // no curve: the usual rule
  }

  TEST_CASE("timing stops early only far past the zero-credit ratio") {
    // Reference 1 ms, zero credit at a ratio of 0.1: a 10 ms call earns nothing; beyond 20 ms
    // no benefit of the doubt can bring it back.
    labkit::StoppingRule rule;
    rule.beyond_credit_ms = labkit::beyond_credit_ms(1.0, 0.1);
    CHECK(rule.beyond_credit_ms == doctest::Approx(20.0));
    CHECK_FALSE(labkit::beyond_credit(rule, labkit::summarize({25.0, 25.0})));  // too few
    CHECK(labkit::beyond_credit(rule, labkit::summarize({25.0, 25.0, 25.0})));
    CHECK_FALSE(labkit::beyond_credit(rule, labkit::summarize({25.0, 12.0, 12.0})));  // median in reach
    // The points agree: a call at the limit, read as generously as the noise cap allows, scores 0.
    const double ratio_at_limit = 1.0 / rule.beyond_credit_ms;
    CHECK(labkit::ratio_points(ratio_at_limit, 0.1, 0.8, 15, labkit::ratio_noise_cap) == 0);
    CHECK_FALSE(labkit::beyond_credit(labkit::StoppingRule{}, labkit::summarize({1e9, 1e9, 1e9})));  // no limit set
    CHECK(labkit::beyond_credit_ms(1.0, 0.0) == 0);  // a case whose every ratio earns
  }

  TEST_CASE("points follow the curve between the zero- and full-credit ratios") {
    const double no_noise = 0;
    CHECK(labkit::ratio_points(0.04, 0.05, 0.8, 15, no_noise) == 0);
    CHECK(labkit::ratio_points(0.05, 0.05, 0.8, 15, no_noise) == 0);
    CHECK(labkit::ratio_points(0.2, 0.05, 0.8, 15, no_noise) == doctest::Approx(7.5));  // two doublings of four
    CHECK(labkit::ratio_points(0.1, 0.05, 0.8, 15, no_noise) == doctest::Approx(3.7));  // one of four, in tenths
    CHECK(labkit::ratio_points(0.8, 0.05, 0.8, 15, no_noise) == 15);
    CHECK(labkit::ratio_points(3.0, 0.05, 0.8, 15, no_noise) == 15);
    CHECK(labkit::ratio_points(-1, 0.05, 0.8, 15, no_noise) == 0);
    CHECK(labkit::ratio_points(std::nan(""), 0.05, 0.8, 15, no_noise) == 0);
  }

  TEST_CASE("a ratio within noise of the full-credit ratio gets full credit") {
    const double noise = labkit::ratio_noise(0.005, 0.005);
    CHECK(noise >= 0.03);
    CHECK(labkit::ratio_points(0.78, 0.05, 0.8, 15, noise) == 15);
    CHECK(labkit::ratio_points(0.5, 0.05, 0.8, 15, noise) < 15);
  }

  TEST_CASE("no spread of a submission's samples widens its benefit of the doubt beyond the cap") {
    CHECK(labkit::ratio_noise(1e9, 0.005) == doctest::Approx(labkit::ratio_noise_cap));
    CHECK(labkit::ratio_noise(0, 0) == doctest::Approx(labkit::ratio_noise_floor));
    // Nine honest samples and a tenth that undoes them (its mean near 0): the median's error
    // stays that of the honest nine.
    std::vector<double> scattered;
    for (int i = 0; i < 90; ++i) scattered.push_back(i % 10 == 9 ? -9.0 : 1.0 + 0.001 * (i % 3));
    const labkit::SampleSummary s = labkit::summarize(scattered);
    CHECK(s.median == doctest::Approx(1.0).epsilon(0.01));
    CHECK(s.relative_error > 1);
    CHECK(s.median_relative_error < 0.01);
    CHECK(labkit::noise_relative_error(s) == doctest::Approx(s.median_relative_error));
  }

  TEST_CASE("a report scores only where the grader's clock confirms it, sample by sample") {
    // An honest report: within the window, above the bound less the slack.
    CHECK(labkit::sample_time({1.0, 1.5, 1.02}) == doctest::Approx(1.0));
    // Below the bound by more than the slack (0.02 + 10%): the bound is scored.
    CHECK(labkit::sample_time({0.5, 1.5, 1.0}) == doctest::Approx(1.0));
    CHECK_FALSE(labkit::report_confirmed({0.5, 1.5, 1.0}));
    // No time at all: negative, zero, not a number, longer than the window.
    for (double forged : {-3.0, 0.0, std::nan(""), 2.0}) {
      const labkit::SampleClocks clocks{forged, 1.5, 1.0};
      CHECK_FALSE(labkit::report_is_a_time(clocks));
      CHECK(labkit::sample_time(clocks) == doctest::Approx(1.0));
    }
  }

  TEST_CASE("the empty call's ceiling sits just above the overheads measured without a submission") {
    std::vector<double> clean;
    for (int i = 0; i < 15; ++i) clean.push_back(0.10 + 0.002 * (i % 5));
    const double ceiling = labkit::empty_call_ceiling_ms(clean);
    CHECK(ceiling > 0.108);   // most clean overheads fit under it
    CHECK(ceiling < 0.125);   // a stopped or crowded empty call does not
    CHECK(std::isinf(labkit::empty_call_ceiling_ms({})));
  }
}
