#include "labkit/compare.h"

#include <doctest/doctest.h>

#include <limits>

TEST_SUITE("compare") {
  TEST_CASE("exact comparison counts mismatches and reports the first few with their index") {
    std::vector<int> expected(100, 1), actual(100, 1);
    for (int i : {3, 10, 20, 30, 40, 50, 60}) actual[i] = 2;
    const auto result = labkit::compare_exact(expected, actual);
    CHECK_FALSE(result.ok());
    CHECK(result.mismatches == 7);
    CHECK(result.first.size() == labkit::mismatches_reported);
    CHECK(result.describe() == "7 of 100 values differ: [3] expected 1, got 2; [10] expected 1, got 2; "
                               "[20] expected 1, got 2; [30] expected 1, got 2; [40] expected 1, got 2; ...");
    CHECK(result.describe([](std::size_t i) { return "bin " + std::to_string(i); }).find("bin 3 expected") !=
          std::string::npos);
  }

  TEST_CASE("equal inputs pass and describe nothing; different lengths fail") {
    const std::vector<std::uint8_t> a = {1, 2, 3};
    CHECK(labkit::compare_exact(a, a).ok());
    CHECK(labkit::compare_exact(a, a).describe().empty());
    const auto shorter = labkit::compare_exact(a, std::vector<std::uint8_t>{1, 2});
    CHECK_FALSE(shorter.ok());
    CHECK(shorter.describe() == "expected 3 values, got 2");
  }

  TEST_CASE("close comparison: absolute plus relative tolerance, and NaN never passes") {
    const std::vector<float> expected = {1.0f, 100.0f, 0.0f};
    CHECK(labkit::compare_close(expected, std::vector<float>{1.0005f, 100.05f, 0.0009f}, 1e-3, 1e-3).ok());
    CHECK_FALSE(labkit::compare_close(expected, std::vector<float>{1.01f, 100.0f, 0.0f}, 1e-3, 1e-3).ok());
    const float nan = std::numeric_limits<float>::quiet_NaN();
    CHECK_FALSE(labkit::compare_close(expected, std::vector<float>{nan, 100.0f, 0.0f}, 1e9, 1e9).ok());
  }

  TEST_CASE("ULP distance") {
    CHECK(labkit::ulp_distance(1.0f, 1.0f) == 0);
    CHECK(labkit::ulp_distance(1.0f, std::nextafter(1.0f, 2.0f)) == 1);
    CHECK(labkit::ulp_distance(-0.0f, 0.0f) == 0);
    CHECK(labkit::ulp_distance(std::nextafter(0.0f, -1.0f), std::nextafter(0.0f, 1.0f)) == 2);
    CHECK(labkit::compare_ulp({1.0f}, {std::nextafter(1.0f, 2.0f)}, 1).ok());
    CHECK_FALSE(labkit::compare_ulp({1.0f}, {1.001f}, 4).ok());
  }
}
