#include "labkit/generators.h"

#include <doctest/doctest.h>

#include <mutex>
#include <set>
#include <stdexcept>

using labkit::Distribution;
using labkit::generate;
using labkit::InputSpec;

TEST_SUITE("generators") {
  TEST_CASE("the same seed gives the same input, another seed another input") {
    const InputSpec spec{Distribution::uniform, 7, -100, 100};
    CHECK(generate<int>(1000, spec) == generate<int>(1000, spec));
    InputSpec other = spec;
    other.seed = 8;
    CHECK(generate<int>(1000, spec) != generate<int>(1000, other));
  }

  TEST_CASE("element i does not depend on n") {
    const InputSpec spec{Distribution::uniform, 3, 0, 255};
    const auto shorter = generate<std::uint8_t>(65, spec);
    const auto longer = generate<std::uint8_t>(1000, spec);
    CHECK(std::equal(shorter.begin(), shorter.end(), longer.begin()));
  }

  TEST_CASE("values stay in [lo, hi], the extremes included") {
    for (Distribution d : {Distribution::uniform, Distribution::skewed, Distribution::extremes,
                           Distribution::few_distinct, Distribution::sorted_ascending}) {
      CAPTURE(labkit::to_string(d));
      const auto values = generate<std::int32_t>(20000, {d, 11, -2147483648.0, 2147483647.0});
      for (std::int32_t v : values) REQUIRE(double(v) >= -2147483648.0);
      if (d == Distribution::extremes) {
        CHECK(std::count(values.begin(), values.end(), INT32_MIN) > 0);
        CHECK(std::count(values.begin(), values.end(), INT32_MAX) > 0);
      }
    }
    const auto floats = generate<float>(10000, {Distribution::uniform, 1, -1, 1});
    for (float f : floats) REQUIRE((f >= -1 && f <= 1));
  }

  TEST_CASE("each distribution has its shape") {
    const auto same = generate<std::uint8_t>(1000, {Distribution::all_same, 5, 0, 255});
    CHECK(std::set<std::uint8_t>(same.begin(), same.end()).size() == 1);
    const auto two = generate<std::uint8_t>(1000, {Distribution::few_distinct, 5, 0, 255, 2});
    CHECK(std::set<std::uint8_t>(two.begin(), two.end()).size() <= 2);
    const auto up = generate<int>(1000, {Distribution::sorted_ascending, 5, 0, 1000});
    CHECK(std::is_sorted(up.begin(), up.end()));
    const auto down = generate<int>(1000, {Distribution::sorted_descending, 5, 0, 1000});
    CHECK(std::is_sorted(down.rbegin(), down.rend()));
    // Skewed: the most common value is far above the uniform share of 1/256.
    const auto text = generate<std::uint8_t>(100000, {Distribution::skewed, 5, 0, 255});
    std::vector<int> counts(256);
    for (auto b : text) ++counts[b];
    CHECK(*std::max_element(counts.begin(), counts.end()) > 100000 / 20);
  }

  TEST_CASE("distribution names round-trip, and unknown names are refused") {
    CHECK(labkit::parse_distribution("few_distinct") == Distribution::few_distinct);
    CHECK(labkit::to_string(Distribution::extremes) == "extremes");
    CHECK_THROWS_WITH_AS(labkit::parse_distribution("gaussian"), doctest::Contains("known:"), std::invalid_argument);
  }

  TEST_CASE("a run seed changes the case's seed; zero keeps it") {
    CHECK(labkit::mix_seeds(42, 0) == 42);
    CHECK(labkit::mix_seeds(42, 1) != 42);
    CHECK(labkit::mix_seeds(42, 1) != labkit::mix_seeds(42, 2));
  }

  TEST_CASE("generation on all cores gives each element exactly what one core would") {
    // Past the chunk size, so several threads share the work: every element is still a
    // function of the seed and its index alone.
    const std::size_t n = (std::size_t(1) << 22) + 17;
    const labkit::InputSpec spec{Distribution::few_distinct, 9, 0, 1000, 7};
    const auto parallel = generate<std::int32_t>(n, spec);
    const auto small = generate<std::int32_t>(1000, spec);  // one chunk: a single thread
    CHECK(std::equal(small.begin(), small.end(), parallel.begin()));
    const auto again = generate<std::int32_t>(n, spec);
    CHECK(again == parallel);
    std::size_t sum = 0;
    labkit::parallel_chunks(n, [&](std::size_t begin, std::size_t end) {
      static std::mutex mutex;
      std::lock_guard lock(mutex);
      sum += end - begin;
    });
    CHECK(sum == n);
  }
}
