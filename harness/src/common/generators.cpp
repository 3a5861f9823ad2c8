#include "labkit/generators.h"

#include "labkit/defences.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace labkit {

namespace {
struct NamedDistribution {
  const char* name;
  Distribution value;
};
constexpr NamedDistribution distribution_names[] = {
    {"uniform", Distribution::uniform},
    {"all_same", Distribution::all_same},
    {"few_distinct", Distribution::few_distinct},
    {"skewed", Distribution::skewed},
    {"sorted_ascending", Distribution::sorted_ascending},
    {"sorted_descending", Distribution::sorted_descending},
    {"extremes", Distribution::extremes},
};
}  // namespace

Distribution parse_distribution(const std::string& name) {
  for (const auto& entry : distribution_names)
    if (name == entry.name) return entry.value;
  std::string known;
  for (const auto& entry : distribution_names) known += std::string(known.empty() ? "" : ", ") + entry.name;
  throw std::invalid_argument("unknown distribution '" + name + "' (known: " + known + ")");
}

std::string to_string(Distribution distribution) {
  for (const auto& entry : distribution_names)
    if (entry.value == distribution) return entry.name;
  return "unknown";
}

std::vector<double> detail::zipf_cdf(std::size_t count) {
  std::vector<double> cdf(count);
  double total = 0;
  for (std::size_t rank = 0; rank < count; ++rank) cdf[rank] = total += 1.0 / double(rank + 1);
  for (double& value : cdf) value /= total;
  return cdf;
}

std::vector<std::uint64_t> detail::stray_positions(const InputSpec& spec, std::size_t n) {
  if (spec.strays < 0 || spec.strays > InputSpec::max_strays)
    throw std::invalid_argument("strays: " + std::to_string(spec.strays) + " is outside 0 to " +
                                std::to_string(InputSpec::max_strays));
  if (spec.strays == 0 || n == 0 || !defence_enabled(Defence::varied_inputs)) return {};
  // A stream of its own, so the strays leave the constant and every other element as they are.
  const std::uint64_t stream = splitmix64(splitmix64(spec.seed) ^ 0x5724A7B05ull);
  std::uint64_t draws = 0;
  const auto next = [&] { return splitmix64(stream + 0x9E3779B97F4A7C15ull * ++draws); };
  // The count is drawn too: a sampler cannot know how many differences are left to find.
  const auto count = std::min<std::uint64_t>(std::uint64_t(uniform_integer(next(), 1, spec.strays)), n);
  std::vector<std::uint64_t> positions;
  while (positions.size() < count) {
    const auto position = std::uint64_t(uniform_integer(next(), 0, std::int64_t(n - 1)));
    if (std::find(positions.begin(), positions.end(), position) == positions.end()) positions.push_back(position);
  }
  return positions;
}

}  // namespace labkit
