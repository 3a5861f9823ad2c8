#include "labkit/defences.h"
#include "labkit/generators.h"

#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>

using labkit::Distribution;
using labkit::generate;
using labkit::InputSpec;

namespace {

// all_same with up to `strays` strays.
InputSpec with_strays(std::uint64_t seed, double lo, double hi, int strays = InputSpec::max_strays) {
  InputSpec spec{Distribution::all_same, seed, lo, hi};
  spec.strays = strays;
  return spec;
}

// The positions where `values` differ from `constant`.
template <class T>
std::set<std::uint64_t> positions_other_than(const std::vector<T>& values, T constant) {
  std::set<std::uint64_t> positions;
  for (std::size_t i = 0; i < values.size(); ++i)
    if (values[i] != constant) positions.insert(i);
  return positions;
}

// Checks an all_same input with strays against the same seed's constant: 1 to `strays` (and
// at most n) elements differ, exactly at the positions drawn, all within [lo, hi], the same on
// every call. Returns those positions.
template <class T>
std::set<std::uint64_t> checked_strays(std::size_t n, const InputSpec& spec) {
  InputSpec constant_spec = spec;
  constant_spec.strays = 0;
  const T constant = generate<T>(1, constant_spec)[0];
  const std::vector<T> values = generate<T>(n, spec);
  const std::set<std::uint64_t> strays = positions_other_than(values, constant);
  CHECK(strays.size() >= 1);
  CHECK(strays.size() <= std::min<std::size_t>(std::size_t(spec.strays), n));
  const std::vector<std::uint64_t> drawn = labkit::detail::stray_positions(spec, n);
  CHECK(strays == std::set<std::uint64_t>(drawn.begin(), drawn.end()));  // no stray drew the constant
  for (T v : values) REQUIRE((double(v) >= spec.lo && double(v) <= spec.hi));
  CHECK(generate<T>(n, spec) == values);
  return strays;
}

// Set in the copy of this binary that a test starts with some defences off.
constexpr const char* child_marker = "LABKIT_TEST_GENERATORS_CHILD";

// Runs this binary again, only `test_case`, with `defences` switched off: the switches are read
// once per process, so only a fresh one sees them. Returns its exit status.
int run_self_without(const char* defences, const std::string& test_case) {
  const pid_t pid = fork();
  if (pid == 0) {
    setenv(labkit::env::disabled_defences, defences, 1);
    setenv(child_marker, "1", 1);
    const std::string filter = "--test-case=" + test_case;
    execl("/proc/self/exe", "kit-tests", filter.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

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

  TEST_CASE("a sorted case sorted on every core is the uniform case sorted by std::sort") {
    const std::size_t n = (std::size_t(5) << 20) + 3;  // several chunks, an odd number of them likely
    std::vector<std::uint32_t> expected = generate<std::uint32_t>(n, {Distribution::uniform, 9, 0, 4294967295.0});
    std::sort(expected.begin(), expected.end());
    CHECK(generate<std::uint32_t>(n, {Distribution::sorted_ascending, 9, 0, 4294967295.0}) == expected);
    std::reverse(expected.begin(), expected.end());
    CHECK(generate<std::uint32_t>(n, {Distribution::sorted_descending, 9, 0, 4294967295.0}) == expected);
    std::vector<int> odd_runs = {5, 3, 9, 1, 7};
    labkit::parallel_sort(odd_runs, std::less<int>());
    CHECK(odd_runs == std::vector<int>{1, 3, 5, 7, 9});
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

  TEST_CASE("all_same with strays: 1 to `strays` other values at positions drawn from the seed") {
    std::set<std::set<std::uint64_t>> position_sets;
    std::set<std::size_t> counts;
    for (std::uint64_t seed = 1; seed <= 32; ++seed) {
      CAPTURE(seed);
      const auto strays = checked_strays<std::uint8_t>(100003, with_strays(seed, 0, 255));
      position_sets.insert(strays);
      counts.insert(strays.size());
    }
    CHECK(position_sets.size() == 32);  // each draw, new places
    CHECK(counts.size() > 1);           // and a new count
  }

  TEST_CASE("strays in other types and ranges, and in inputs shorter than their number") {
    for (std::uint64_t seed = 1; seed <= 8; ++seed) {
      CAPTURE(seed);
      checked_strays<std::int32_t>(5000, with_strays(seed, -2147483648.0, 2147483647.0));
      checked_strays<std::uint32_t>(5000, with_strays(seed, 0, 4294967295.0));
      checked_strays<float>(5000, with_strays(seed, -1, 1));
      checked_strays<std::uint8_t>(5000, with_strays(seed, 0, 1));  // each stray is the one other value
      checked_strays<std::uint8_t>(3, with_strays(seed, 0, 255));
    }
    CHECK(generate<std::uint8_t>(0, with_strays(7, 0, 255)).empty());
  }

  TEST_CASE("without strays all_same is exactly constant") {
    for (std::uint64_t seed = 1; seed <= 8; ++seed) {
      const auto values = generate<std::uint8_t>(100003, with_strays(seed, 0, 255, 0));
      CHECK(std::set<std::uint8_t>(values.begin(), values.end()).size() == 1);
    }
  }

  TEST_CASE("strays are refused where they cannot mean anything") {
    InputSpec uniform{Distribution::uniform, 1, 0, 255};
    uniform.strays = 4;
    CHECK_THROWS_AS(generate<int>(100, uniform), std::invalid_argument);
    CHECK_THROWS_AS(generate<int>(100, with_strays(1, 1, 1)), std::invalid_argument);  // no other value
    CHECK_THROWS_AS(generate<int>(100, with_strays(1, 0, 255, InputSpec::max_strays + 1)), std::invalid_argument);
    CHECK_THROWS_AS(generate<int>(100, with_strays(1, 0, 255, -1)), std::invalid_argument);
    CHECK_THROWS_AS(labkit::element_rule<int>(with_strays(1, 0, 255)), std::invalid_argument);  // where do they go?
    CHECK_NOTHROW(labkit::element_rule<int>(with_strays(1, 1, 1, 0)));
  }

  TEST_CASE("with the varied-inputs defence off all_same stays constant") {
    if (std::getenv(child_marker) != nullptr) {  // the copy started below
      REQUIRE_FALSE(labkit::defence_enabled(labkit::Defence::varied_inputs));
      for (std::uint64_t seed = 1; seed <= 8; ++seed) {
        const auto values = generate<std::uint8_t>(100003, with_strays(seed, 0, 255));
        CHECK(std::set<std::uint8_t>(values.begin(), values.end()).size() == 1);
      }
      return;
    }
    CHECK(run_self_without("varied-inputs", "with the varied-inputs defence off all_same stays constant") == 0);
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

TEST_CASE("an input's kind is every field of its spec but the seed") {
  labkit::InputSpec spec;
  labkit::InputSpec reseeded = spec;
  reseeded.seed = spec.seed + 1;
  CHECK(spec.kind() == reseeded.kind());
  labkit::InputSpec with_strays = spec;
  with_strays.strays = 3;
  CHECK(spec.kind() != with_strays.kind());
}
