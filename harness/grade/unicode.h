// UTF-8 as the grader meets it in folder names: a zip made on macOS writes "é" as "e" and a
// combining accent (U+0301), a spreadsheet as one code point (U+00E9), a Latin-1 zip as a byte
// that is no UTF-8 at all.
#pragma once

#include <string>
#include <utility>

namespace grade {

// The code point at text[at] and its length in bytes; an invalid byte is U+FFFD, length 1.
std::pair<char32_t, std::size_t> decode_utf8(const std::string& text, std::size_t at);
std::string encode_utf8(char32_t code);

// An accent of a decomposed "é" (U+0300 to U+036F).
bool combining_mark(char32_t code);

// The text with each Latin letter and the combining accents that follow it composed into one
// code point where Unicode has one (NFC, for the Latin scripts): names that read the same
// compare equal whichever way they were written. Invalid bytes are kept as they are.
std::string composed(const std::string& text);

}  // namespace grade
