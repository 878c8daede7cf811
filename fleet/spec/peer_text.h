// Text a device chooses that operators then read (its name, a replica's detail, a pause reason,
// its version and platform strings): bounded, and without the characters that rewrite a terminal
// or a log line (control characters, and the Unicode bidirectional overrides that reorder what a
// table shows).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace cellserve::fleet {

// Names and short strings a device reports; replica details and reasons.
inline constexpr size_t kMaxPeerNameChars = 64;
inline constexpr size_t kMaxPeerDetailChars = 256;

// `text` without C0 controls (tab and newline included), DEL, C1 controls (U+0080..U+009F) and
// the bidirectional controls U+200E, U+200F, U+202A..U+202E, U+2066..U+2069; then at most
// `max_chars` code points, cut on a character boundary. Bytes that are not UTF-8 are dropped
// too.
std::string peer_text(std::string_view text, size_t max_chars);

}  // namespace cellserve::fleet
