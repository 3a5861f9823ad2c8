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

// Whether lab `next` comes right after lab `id`: both numbers ("05", "06").
inline bool follows(const std::string& id, const std::string& next) {
  const auto is_number = [](const std::string& text) {
    return !text.empty() && text.size() < 6 && text.find_first_not_of("0123456789") == std::string::npos;
  };
  return is_number(id) && is_number(next) && std::stoi(next) == std::stoi(id) + 1;
}

// Lab ids as a reader takes them in: "01, 03, 05-13", three or more labs in a row as a range.
inline std::string id_ranges(const std::vector<std::string>& ids) {
  std::string named;
  for (std::size_t first = 0, last = 0; first < ids.size(); first = last + 1) {
    for (last = first; last + 1 < ids.size() && follows(ids[last], ids[last + 1]);) ++last;
    if (last - first < 2) last = first;
    named += (named.empty() ? "" : ", ") + ids[first] + (last > first ? "-" + ids[last] : "");
  }
  return named;
}

// One CSV line (RFC 4180): a field holding a comma, a quote or a line break is quoted, its
// quotes doubled.
inline std::string csv_row(const std::vector<std::string>& fields) {
  const auto field = [](const std::string& text) {
    if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
    std::string quoted = "\"";
    for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
    return quoted + "\"";
  };
  std::string row;
  for (std::size_t i = 0; i < fields.size(); ++i) row += (i ? "," : "") + field(fields[i]);
  return row + "\n";
}

}  // namespace grade
