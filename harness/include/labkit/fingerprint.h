// FNV-1a over bytes: enough to notice that a file changed (saved results, calibration keys).
#pragma once

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace labkit {

inline std::uint64_t hash_bytes(const std::string& bytes, std::uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ull;
  return h;
}

inline std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// One hash over several files' bytes, in the order given.
inline std::uint64_t hash_files(const std::vector<std::string>& paths, std::uint64_t h = 1469598103934665603ull) {
  for (const std::string& path : paths) h = hash_bytes(file_bytes(path), h);
  return h;
}

inline std::string hex(std::uint64_t h) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(h));
  return text;
}

}  // namespace labkit
