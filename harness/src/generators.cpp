#include "labkit/generators.h"

#include <stdexcept>

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

}  // namespace labkit
