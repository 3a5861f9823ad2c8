// Seeded, deterministic input generators. Element i depends only on (seed, i), through
// splitmix64 (strays, below, on n too), so a case regenerates bit for bit on any machine and
// any standard library.
#pragma once

#include <sched.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

// The per-element formulas run on the GPU too (labkit/fresh_input.h draws timed inputs there).
#if defined(__CUDACC__)
#define LABKIT_HOST_DEVICE __host__ __device__
#else
#define LABKIT_HOST_DEVICE
#endif

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
  static constexpr int max_strays = 16;

  Distribution distribution = Distribution::uniform;
  std::uint64_t seed = 1;
  double lo = 0;
  double hi = 255;
  int distinct = 2;  // for few_distinct
  // all_same only: up to this many elements (1 to `strays`, the count drawn from the seed) hold
  // other values in [lo, hi], at positions drawn from the seed. For timed cases: a constant
  // input's answer could be read off a few sampled elements, and strays at unknown places
  // make every element count. 0 keeps the input exactly constant.
  int strays = 0;

  // Every field but the seed: what decides the kind of input drawn, where each timed call draws
  // its values anew. Buffers kept for one spec serve another of the same kind.
  auto kind() const { return std::tie(distribution, lo, hi, distinct, strays); }
};

LABKIT_HOST_DEVICE inline std::uint64_t splitmix64(std::uint64_t x) {
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
LABKIT_HOST_DEVICE inline double unit_double(std::uint64_t bits) { return double(bits >> 11) * 0x1.0p-53; }

// Uniform integer in [lo, hi] (Lemire's multiply-high; the bias is below 2^-32).
LABKIT_HOST_DEVICE inline std::int64_t uniform_integer(std::uint64_t bits, std::int64_t lo, std::int64_t hi) {
  const auto span = std::uint64_t(hi - lo) + 1;  // 0 means the full 64-bit range
  if (span == 0) return std::int64_t(bits);
  return lo + std::int64_t((unsigned __int128)bits * span >> 64);
}

// Cumulative weights of a Zipf(1) law over `count` ranks.
std::vector<double> zipf_cdf(std::size_t count);

// The distinct positions in [0, n) of an all_same input's strays (1 to spec.strays of them,
// at most n), drawn from the seed; none when spec.strays is 0 or the varied-inputs defence is
// off (labkit/defences.h). Throws std::invalid_argument for a spec that cannot have strays.
std::vector<std::uint64_t> stray_positions(const InputSpec& spec, std::size_t n);

template <class T>
LABKIT_HOST_DEVICE T draw(std::uint64_t bits, double lo, double hi) {
  if constexpr (std::is_integral_v<T>) {
    return T(uniform_integer(bits, std::int64_t(lo), std::int64_t(hi)));
  } else {
    return T(lo + (hi - lo) * unit_double(bits));
  }
}

}  // namespace detail

// The CPUs this process may run on (its affinity, which the grader narrows to a GPU's share of
// the machine), not every CPU the machine has: more threads than that only queue for them.
inline std::size_t usable_cpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::size_t(std::max(1, CPU_COUNT(&set)));
  return std::max(1u, std::thread::hardware_concurrency());
}

// Runs body(begin, end) over [0, n) in chunks on all usable cores: the generators are counter-based
// (element i depends on i and the seed alone), so the result is the same on any core count.
template <class Body>
void parallel_chunks(std::size_t n, Body body) {
  constexpr std::size_t min_chunk = std::size_t(1) << 20;
  const std::size_t workers = std::min<std::size_t>(usable_cpus(), (n + min_chunk - 1) / min_chunk);
  if (workers <= 1) return body(std::size_t(0), n);
  std::vector<std::thread> threads;
  const std::size_t chunk = (n + workers - 1) / workers;
  for (std::size_t w = 0; w < workers; ++w)
    threads.emplace_back(body, std::min(n, w * chunk), std::min(n, (w + 1) * chunk));
  for (std::thread& t : threads) t.join();
}

// std::sort(values, less) on all cores: parallel_chunks' chunks sorted, then merged pairwise.
// The same result, a few times sooner: one core spends seconds of a lab's checks on a sorted
// case of 2^25 keys.
template <class T, class Less>
void parallel_sort(std::vector<T>& values, Less less) {
  using Run = std::pair<std::size_t, std::size_t>;  // [begin, end) of a sorted stretch
  std::vector<Run> runs;
  std::mutex runs_mutex;
  parallel_chunks(values.size(), [&](std::size_t begin, std::size_t end) {
    std::sort(values.begin() + std::ptrdiff_t(begin), values.begin() + std::ptrdiff_t(end), less);
    const std::lock_guard lock(runs_mutex);
    runs.emplace_back(begin, end);
  });
  std::sort(runs.begin(), runs.end());
  while (runs.size() > 1) {
    std::vector<Run> merged;
    std::vector<std::thread> merges;
    for (std::size_t r = 0; r + 1 < runs.size(); r += 2) {
      const auto first = values.begin() + std::ptrdiff_t(runs[r].first);
      const auto middle = values.begin() + std::ptrdiff_t(runs[r].second);
      const auto last = values.begin() + std::ptrdiff_t(runs[r + 1].second);
      merges.emplace_back([first, middle, last, less] { std::inplace_merge(first, middle, last, less); });
      merged.emplace_back(runs[r].first, runs[r + 1].second);
    }
    if (runs.size() % 2 == 1) merged.push_back(runs.back());
    for (std::thread& merge : merges) merge.join();
    runs = std::move(merged);
  }
}

// Element i of an input whose elements are independent of each other (every distribution but
// the sorted ones): the one formula the CPU (`generate`) and the GPU (`generate_on_device`,
// labkit/fresh_input.h) share, so a case is the same data wherever it is made. Small enough to
// pass to a kernel by value.
template <class T>
struct ElementRule {
  static constexpr int max_values = 256;  // few_distinct's `distinct`, skewed's ranks
  static constexpr int max_strays = InputSpec::max_strays;

  Distribution distribution = Distribution::uniform;
  std::uint64_t seed = 0;  // splitmix64 of the spec's
  double lo = 0, hi = 0;
  int value_count = 0;          // all_same: 1; few_distinct: distinct; skewed: ranks
  T values[max_values] = {};    // the values those pick from, fixed by the seed
  double cdf[max_values] = {};  // skewed: cumulative Zipf weights of the ranks
  int stray_count = 0;          // all_same: elements that hold another value
  std::uint64_t stray_positions[max_strays] = {};
  T stray_values[max_strays] = {};

  LABKIT_HOST_DEVICE std::uint64_t bits(std::size_t i) const { return splitmix64(seed + 0x632BE59BD9B4E019ull * i); }

  LABKIT_HOST_DEVICE T operator()(std::size_t i) const {
    switch (distribution) {
      case Distribution::all_same:
        for (int s = 0; s < stray_count; ++s)
          if (stray_positions[s] == i) return stray_values[s];
        return values[0];
      case Distribution::few_distinct:
        return values[detail::uniform_integer(bits(i), 0, value_count - 1)];
      case Distribution::skewed: {
        const double u = detail::unit_double(bits(i));
        int rank = 0;  // the first rank whose cumulative weight reaches u (lower_bound)
        for (int step = max_values / 2; step > 0; step /= 2)
          if (rank + step <= value_count && cdf[rank + step - 1] < u) rank += step;
        return values[rank < value_count ? rank : value_count - 1];
      }
      case Distribution::extremes: {
        const std::uint64_t b = bits(i);
        const double offset = double(b & 3);  // the extreme itself, or up to 3 inside it
        double value = (b & 4) ? hi - offset : lo + offset;
        value = value < lo ? lo : (value > hi ? hi : value);
        return T(value);
      }
      default:  // uniform, and the sorted ones before sorting
        return detail::draw<T>(bits(i), lo, hi);
    }
  }
};

namespace detail {

// `n` for an element rule made without one: enough for every spec without strays.
constexpr std::size_t length_not_given = ~std::size_t(0);

// Stray `index`'s value: in [lo, hi], drawn from the seed, and never all_same's constant,
// or the stray would not be one. A range with no other value (lo == hi) is refused.
template <class T>
T stray_value(const ElementRule<T>& rule, int index) {
  constexpr int attempts = 64;  // a range of two values draws the constant 64 times with odds 2^-64
  const std::uint64_t stream = splitmix64(rule.seed ^ 0x57A7C0DEull) + std::uint64_t(index) * attempts;
  for (int attempt = 0; attempt < attempts; ++attempt) {
    const T value = draw<T>(splitmix64(stream + std::uint64_t(attempt)), rule.lo, rule.hi);
    if (value != rule.values[0]) return value;
  }
  throw std::invalid_argument("strays need a range [lo, hi] with more than one value");
}

template <class T>
void place_strays(ElementRule<T>& rule, const InputSpec& spec, std::size_t n) {
  if (spec.strays == 0) return;
  if (n == length_not_given)
    throw std::invalid_argument("an input with strays needs its length: element_rule(spec, n)");
  if (!(spec.lo < spec.hi)) throw std::invalid_argument("strays need a range [lo, hi] with more than one value");
  const std::vector<std::uint64_t> positions = stray_positions(spec, n);
  rule.stray_count = int(positions.size());
  for (int s = 0; s < rule.stray_count; ++s) {
    rule.stray_positions[s] = positions[std::size_t(s)];
    rule.stray_values[s] = stray_value(rule, s);
  }
}

}  // namespace detail

// The rule for an input of `n` elements (n places the strays; a spec without strays does not
// need it). Throws std::invalid_argument for more distinct values or strays than it holds.
template <class T>
ElementRule<T> element_rule(const InputSpec& spec, std::size_t n = detail::length_not_given) {
  if (spec.strays != 0 && spec.distribution != Distribution::all_same)
    throw std::invalid_argument("strays belong to all_same inputs, not " + to_string(spec.distribution));
  ElementRule<T> rule;
  rule.distribution = spec.distribution;
  rule.seed = splitmix64(spec.seed);
  rule.lo = spec.lo;
  rule.hi = spec.hi;
  switch (spec.distribution) {
    case Distribution::all_same:
      rule.value_count = 1;
      rule.values[0] = detail::draw<T>(splitmix64(rule.seed ^ 1), spec.lo, spec.hi);
      detail::place_strays(rule, spec, n);
      break;
    case Distribution::few_distinct:
    case Distribution::skewed: {
      const bool skewed = spec.distribution == Distribution::skewed;
      rule.value_count = skewed ? ElementRule<T>::max_values : std::max(spec.distinct, 1);
      if (rule.value_count > ElementRule<T>::max_values)
        throw std::invalid_argument("few_distinct supports at most 256 distinct values");
      for (int v = 0; v < rule.value_count; ++v)
        rule.values[v] = detail::draw<T>(splitmix64(rule.seed ^ std::uint64_t(v + 1)), spec.lo, spec.hi);
      if (skewed) {
        const std::vector<double> cdf = detail::zipf_cdf(std::size_t(rule.value_count));
        std::copy(cdf.begin(), cdf.end(), rule.cdf);
      }
      break;
    }
    default:
      break;
  }
  return rule;
}

template <class T>
std::vector<T> generate(std::size_t n, const InputSpec& spec) {
  static_assert(std::is_arithmetic_v<T>, "generate<T> makes numbers");
  std::vector<T> out(n);
  const ElementRule<T> rule = element_rule<T>(spec, n);
  parallel_chunks(n, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) out[i] = rule(i);
  });
  if (spec.distribution == Distribution::sorted_ascending) parallel_sort(out, std::less<T>());
  if (spec.distribution == Distribution::sorted_descending) parallel_sort(out, std::greater<T>());
  return out;
}

}  // namespace labkit
