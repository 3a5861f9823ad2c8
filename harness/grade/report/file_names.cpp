#include "report/file_names.h"

#include "unicode.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <string_view>

namespace grade {

namespace {

// Latin letters with accents, U+00C0 to U+017F, by their base letter; '-' for × and ÷.
constexpr std::string_view latin_1_letters = "AAAAAAACEEEEIIIIDNOOOOO-OUUUUYTsaaaaaaaceeeeiiiidnooooo-ouuuuyty";
constexpr std::string_view latin_extended_a_letters =
    "AaAaAaCcCcCcCcDdDdEeEeEeEeEeGgGgGgGgHhHhIiIiIiIiIiIiJjKkkLlLlLlLlLlNnNnNnnNnOoOoOoOoRrRrRrSsSsSsSsTtTtTtUuUuUuUuUuUuWwYyYZzZzZzs";
static_assert(latin_1_letters.size() == 0x100 - 0xC0, "a letter for each code point from U+00C0 to U+00FF");
static_assert(latin_extended_a_letters.size() == 0x180 - 0x100, "a letter for each code point from U+0100 to U+017F");

// The ASCII letter a code point reads as in a file name, or '-' to separate words.
char file_name_letter(char32_t code) {
  if (code < 0x80 && (std::isalnum(int(code)) || code == '.' || code == '_' || code == '-')) return char(code);
  if (code >= 0xC0 && code <= 0xFF) return latin_1_letters[code - 0xC0];
  if (code >= 0x100 && code <= 0x17F) return latin_extended_a_letters[code - 0x100];
  return '-';
}

std::string slug(const std::string& who) {
  constexpr std::size_t max_length = 80;
  std::string name;
  for (std::size_t at = 0; at < who.size();) {
    const auto [code, length] = decode_utf8(who, at);
    at += length;
    if (combining_mark(code)) continue;
    const char letter = file_name_letter(code);
    if (letter != '-' || (!name.empty() && name.back() != '-')) name += letter;
  }
  const auto first = name.find_first_not_of(".-");
  name = first == std::string::npos ? "" : name.substr(first, std::min(max_length, name.size() - first));
  while (!name.empty() && (name.back() == '-' || name.back() == '.')) name.pop_back();
  return name.empty() ? "student" : name;
}

std::string lower(std::string text) {
  for (char& c : text) c = char(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

}  // namespace

std::vector<std::string> report_file_names(const std::vector<Report>& reports) {
  std::vector<std::string> names(reports.size());
  std::set<std::string> taken;  // ignoring case: macOS and Windows file systems do
  // A plain-ASCII folder's own name is its file name: no slug made of another folder's name
  // takes it first, whatever the order.
  for (std::size_t i = 0; i < reports.size(); ++i)
    if (slug(reports[i].who) == reports[i].who && taken.insert(lower(reports[i].who)).second)
      names[i] = reports[i].who;
  for (std::size_t i = 0; i < reports.size(); ++i) {
    if (!names[i].empty()) continue;
    const std::string base = slug(reports[i].who);
    std::string name = base;
    for (int n = 2; !taken.insert(lower(name)).second; ++n) name = base + "-" + std::to_string(n);
    names[i] = name;
  }
  return names;
}

}  // namespace grade
