#include "labkit/compare.h"

#include <cstring>
#include <limits>

namespace labkit {

std::string Comparison::describe(const std::function<std::string(std::size_t)>& locate) const {
  if (!size_error.empty()) return size_error;
  if (ok()) return {};
  std::ostringstream out;
  out << mismatches << " of " << checked << " values differ";
  const char* separator = ": ";
  for (const Mismatch& m : first) {
    out << separator << (locate ? locate(m.index) : "[" + std::to_string(m.index) + "]")
        << " expected " << m.expected << ", got " << m.actual;
    separator = "; ";
  }
  if (mismatches > first.size()) out << "; ...";
  return out.str();
}

// Maps a float's bits onto a line where neighbouring floats are neighbouring integers.
static std::int64_t ordered_bits(float value) {
  std::int32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits < 0 ? std::int64_t(std::numeric_limits<std::int32_t>::min()) - bits : bits;
}

std::int64_t ulp_distance(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<std::int64_t>::max();
  const std::int64_t d = ordered_bits(a) - ordered_bits(b);
  return d < 0 ? -d : d;
}

}  // namespace labkit
