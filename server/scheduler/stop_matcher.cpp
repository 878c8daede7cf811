#include "server/scheduler/stop_matcher.h"

#include <algorithm>

namespace cellserve::server {

size_t StopMatcher::find_stop(std::string_view text) const {
  size_t best = std::string_view::npos;
  for (const std::string& s : stops_) {
    if (s.empty()) continue;
    best = std::min(best, text.find(s));
  }
  return best;
}

size_t StopMatcher::releasable(std::string_view text) const {
  size_t hold = 0;
  for (const std::string& s : stops_) {
    // The longest suffix of text that is a proper prefix of s.
    const size_t max_len = std::min(text.size(), s.size() - (s.empty() ? 0 : 1));
    for (size_t len = max_len; len > hold; --len) {
      if (text.substr(text.size() - len) == std::string_view(s).substr(0, len)) {
        hold = len;
        break;
      }
    }
  }
  size_t cut = text.size() - hold;
  // Never split a UTF-8 character: back up over continuation bytes.
  while (cut > 0 && cut < text.size() && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return cut;
}

}  // namespace cellserve::server
