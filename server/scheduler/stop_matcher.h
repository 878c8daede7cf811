// Stop strings over streamed text: finds a stop string even when it arrives split over several
// tokens, and tells how much of the pending text can be released without ever emitting part of
// a stop string.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace cellserve::server {

class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {}

  // Offset of the earliest complete stop string in `text`, or npos.
  size_t find_stop(std::string_view text) const;
  // Length of the longest prefix of `text` that can be released: everything except a tail that
  // is a proper prefix of some stop string (it may still grow into one).
  size_t releasable(std::string_view text) const;

 private:
  std::vector<std::string> stops_;
};

}  // namespace cellserve::server
