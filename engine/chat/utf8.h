// UTF-8 helpers for Python's str semantics: Python strings are sequences of code points, so
// len(), indexing and slicing count code points, and strip()/split() use Unicode whitespace.
// Invalid UTF-8 bytes are treated as one "character" each and preserved unchanged.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace cellserve::engine::chat {

// Decodes the code point at `*pos` and advances past it. An invalid byte decodes to itself
// (0x80..0xFF) and advances by one.
char32_t utf8_decode(std::string_view s, size_t* pos);
void utf8_append(std::string& out, char32_t cp);

// One view per character of `s`.
std::vector<std::string_view> utf8_chars(std::string_view s);
// Python's len(s).
size_t utf8_length(std::string_view s);

// Python's str.isspace() for one code point (the set strip() and split() use).
bool is_py_space(char32_t cp);
// Python's line boundaries (str.splitlines()): \n \r \v \f \x1c \x1d \x1e \x85 \u2028 \u2029.
bool is_line_break(char32_t cp);

// Case mapping for ASCII, Latin-1, Latin Extended-A, Greek and Cyrillic (other scripts are left
// unchanged). py_upper maps "ß" to "SS" as Python does.
std::string py_upper(std::string_view s);
std::string py_lower(std::string_view s);
char32_t to_upper_cp(char32_t cp);
char32_t to_lower_cp(char32_t cp);
// A letter that has case (within the scripts above).
bool is_cased(char32_t cp);
bool is_upper_cp(char32_t cp);
bool is_lower_cp(char32_t cp);
// Python's str.isalpha()/isdigit() for one code point (ASCII digits; letters of the cased scripts
// above plus CJK ideographs, kana and hangul).
bool is_alpha_cp(char32_t cp);
bool is_digit_cp(char32_t cp);

// Python's str.strip(chars) family: with `chars` null, strips Unicode whitespace.
std::string py_strip(std::string_view s, const std::string* chars, bool left, bool right);

}  // namespace cellserve::engine::chat
