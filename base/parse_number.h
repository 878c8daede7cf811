// Whole-string decimal parsing for protocol fields (Content-Length, Range bounds): digits only,
// no sign, no spaces, no overflow.
#pragma once

#include <charconv>
#include <cstdint>
#include <optional>
#include <string_view>

namespace cellserve {

inline std::optional<uint64_t> parse_u64(std::string_view s) {
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

}  // namespace cellserve
