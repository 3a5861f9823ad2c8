// Comparisons that say where they failed: the count of mismatches and the first few, with
// their index (or a lab-supplied location such as "row 3, column 17").
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

namespace labkit {

struct Mismatch {
  std::size_t index = 0;
  std::string expected;
  std::string actual;
};

struct Comparison {
  std::size_t checked = 0;
  std::size_t mismatches = 0;
  std::vector<Mismatch> first;  // the first few, in index order
  std::string size_error;       // set when the two sides differ in length

  bool ok() const { return mismatches == 0 && size_error.empty(); }
  // "3 of 256 values differ: [17] expected 4, got 5; ..." or "" when ok.
  std::string describe(const std::function<std::string(std::size_t)>& locate = {}) const;
};

constexpr std::size_t mismatches_reported = 5;

namespace detail {
template <class T>
std::string show(T value) {
  std::ostringstream out;
  if constexpr (sizeof(T) == 1) out << int(value); else out << value;
  return out.str();
}

template <class T, class Equal>
Comparison compare_with(const std::vector<T>& expected, const std::vector<T>& actual, Equal equal) {
  Comparison result;
  if (expected.size() != actual.size()) {
    result.size_error = "expected " + std::to_string(expected.size()) + " values, got " +
                        std::to_string(actual.size());
    return result;
  }
  result.checked = expected.size();
  for (std::size_t i = 0; i < expected.size(); ++i) {
    if (equal(expected[i], actual[i])) continue;
    if (result.mismatches++ < mismatches_reported)
      result.first.push_back({i, show(expected[i]), show(actual[i])});
  }
  return result;
}
}  // namespace detail

template <class T>
Comparison compare_exact(const std::vector<T>& expected, const std::vector<T>& actual) {
  return detail::compare_with(expected, actual, [](T e, T a) { return e == a; });
}

// |actual - expected| <= atol + rtol * |expected|; NaN never passes.
template <class T>
Comparison compare_close(const std::vector<T>& expected, const std::vector<T>& actual,
                         double atol, double rtol) {
  return detail::compare_with(expected, actual, [=](T e, T a) {
    const double diff = std::fabs(double(a) - double(e));
    return !std::isnan(double(a)) && diff <= atol + rtol * std::fabs(double(e));
  });
}

// Distance in units in the last place between two floats of the same sign convention.
std::int64_t ulp_distance(float a, float b);

inline Comparison compare_ulp(const std::vector<float>& expected, const std::vector<float>& actual,
                              std::int64_t max_ulp) {
  return detail::compare_with(expected, actual, [=](float e, float a) {
    return !std::isnan(a) && ulp_distance(e, a) <= max_ulp;
  });
}

}  // namespace labkit
