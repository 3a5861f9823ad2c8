// Seeded, deterministic input generators. Element i depends only on (seed, i), through
// splitmix64, so a case regenerates bit for bit on any machine and any standard library.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <thread>
#include <vector>

namespace labkit {

enum class Distribution {
  uniform,            // every value in [lo, hi] equally likely
  all_same,           // one value, repeated (maximum contention for atomics)
  few_distinct,       // `distinct` values, equally likely
  skewed,             // Zipf-like: a few values dominate, as letters do in text
  sorted_ascending,   // uniform, then sorted
  sorted_descending,  // uniform, then sorted high to low
  extremes,           // mostly lo and hi themselves, with values next to them
};

Distribution parse_distribution(const std::string& name);  // throws std::invalid_argument
std::string to_string(Distribution distribution);

struct InputSpec {
  Distribution distribution = Distribution::uniform;
  std::uint64_t seed = 1;
  double lo = 0;
  double hi = 255;
  int distinct = 2;  // for few_distinct
};

inline std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Combines a case's public seed with a run seed (grade --seed, or the instructor's secret).
inline std::uint64_t mix_seeds(std::uint64_t case_seed, std::uint64_t run_seed) {
  return run_seed == 0 ? case_seed : splitmix64(case_seed ^ splitmix64(run_seed));
}

namespace detail {

// Uniform in [0, 1).
inline double unit_double(std::uint64_t bits) { return double(bits >> 11) * 0x1.0p-53; }

// Uniform integer in [lo, hi] (Lemire's multiply-high; the bias is below 2^-32).
inline std::int64_t uniform_integer(std::uint64_t bits, std::int64_t lo, std::int64_t hi) {
  const auto span = std::uint64_t(hi - lo) + 1;  // 0 means the full 64-bit range
  if (span == 0) return std::int64_t(bits);
  return lo + std::int64_t((unsigned __int128)bits * span >> 64);
}

// Cumulative weights of a Zipf(1) law over `count` ranks.
std::vector<double> zipf_cdf(std::size_t count);

template <class T>
T draw(std::uint64_t bits, double lo, double hi) {
  if constexpr (std::is_integral_v<T>) {
    return T(uniform_integer(bits, std::int64_t(lo), std::int64_t(hi)));
  } else {
    return T(lo + (hi - lo) * unit_double(bits));
  }
}

}  // namespace detail

// Runs body(begin, end) over [0, n) in chunks on all cores: the generators are counter-based
// (element i depends on i and the seed alone), so the result is the same on any core count.
template <class Body>
void parallel_chunks(std::size_t n, Body body) {
  constexpr std::size_t min_chunk = std::size_t(1) << 20;
  const std::size_t workers =
      std::min<std::size_t>(std::max(1u, std::thread::hardware_concurrency()), (n + min_chunk - 1) / min_chunk);
  if (workers <= 1) return body(std::size_t(0), n);
  std::vector<std::thread> threads;
  const std::size_t chunk = (n + workers - 1) / workers;
  for (std::size_t w = 0; w < workers; ++w)
    threads.emplace_back(body, std::min(n, w * chunk), std::min(n, (w + 1) * chunk));
  for (std::thread& t : threads) t.join();
}

template <class T>
std::vector<T> generate(std::size_t n, const InputSpec& spec) {
  static_assert(std::is_arithmetic_v<T>, "generate<T> makes numbers");
  std::vector<T> out(n);
  const std::uint64_t seed = splitmix64(spec.seed);
  auto bits = [seed](std::size_t i) { return splitmix64(seed + 0x632BE59BD9B4E019ull * i); };
  switch (spec.distribution) {
    case Distribution::uniform:
    case Distribution::sorted_ascending:
    case Distribution::sorted_descending:
      parallel_chunks(n, [&](std::size_t begin, std::size_t end) {
        for (std::size_t i = begin; i < end; ++i) out[i] = detail::draw<T>(bits(i), spec.lo, spec.hi);
      });
      if (spec.distribution == Distribution::sorted_ascending) std::sort(out.begin(), out.end());
      if (spec.distribution == Distribution::sorted_descending)
        std::sort(out.begin(), out.end(), [](T a, T b) { return a > b; });
      break;
    case Distribution::all_same:
      std::fill(out.begin(), out.end(), detail::draw<T>(splitmix64(seed ^ 1), spec.lo, spec.hi));
      break;
    case Distribution::few_distinct: {
      std::vector<T> values(std::max(spec.distinct, 1));
      for (std::size_t v = 0; v < values.size(); ++v)
        values[v] = detail::draw<T>(splitmix64(seed ^ (v + 1)), spec.lo, spec.hi);
      parallel_chunks(n, [&](std::size_t begin, std::size_t end) {
        for (std::size_t i = begin; i < end; ++i)
          out[i] = values[detail::uniform_integer(bits(i), 0, std::int64_t(values.size()) - 1)];
      });
      break;
    }
    case Distribution::skewed: {
      // Ranks drawn by a Zipf law, each rank mapped to a value fixed by the seed.
      const std::vector<double> cdf = detail::zipf_cdf(256);
      std::vector<T> values(cdf.size());
      for (std::size_t v = 0; v < values.size(); ++v)
        values[v] = detail::draw<T>(splitmix64(seed ^ (v + 1)), spec.lo, spec.hi);
      parallel_chunks(n, [&](std::size_t begin, std::size_t end) {
        for (std::size_t i = begin; i < end; ++i) {
          const double u = detail::unit_double(bits(i));
          const auto rank = std::size_t(std::lower_bound(cdf.begin(), cdf.end(), u) - cdf.begin());
          out[i] = values[std::min(rank, values.size() - 1)];
        }
      });
      break;
    }
    case Distribution::extremes:
      parallel_chunks(n, [&](std::size_t begin, std::size_t end) {
        for (std::size_t i = begin; i < end; ++i) {
          const std::uint64_t b = bits(i);
          const double offset = double(b & 3);  // the extreme itself, or up to 3 inside it
          const double value = (b & 4) ? spec.hi - offset : spec.lo + offset;
          out[i] = T(std::clamp(value, spec.lo, spec.hi));
        }
      });
      break;
  }
  return out;
}

}  // namespace labkit
