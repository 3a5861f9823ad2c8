// Small text helpers the grader's steps share.
#pragma once

#include <string>
#include <vector>

namespace grade {

// "a, b, c" for joined({"a", "b", "c"}, ", ").
inline std::string joined(const std::vector<std::string>& items, const std::string& separator) {
  std::string text;
  for (const std::string& item : items) text += (text.empty() ? "" : separator) + item;
  return text;
}

}  // namespace grade
