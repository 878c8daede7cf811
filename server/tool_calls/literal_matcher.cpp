#include "server/tool_calls/literal_matcher.h"

namespace cellserve::server::tool_calls::detail {
namespace {

bool starts_with(std::string_view text, std::string_view prefix) { return text.substr(0, prefix.size()) == prefix; }

}  // namespace

void LiteralMatcher::reset(std::vector<std::string_view> literals) {
  literals_ = std::move(literals);
  seen_.clear();
}

int LiteralMatcher::feed(char c) {
  seen_ += c;
  bool partial = false;
  for (std::size_t i = 0; i < literals_.size(); ++i) {
    if (literals_[i] == seen_) {
      seen_.clear();
      return static_cast<int>(i);
    }
    partial = partial || starts_with(literals_[i], seen_);
  }
  if (partial) return kPartial;
  seen_.pop_back();
  return kMismatch;
}

int TerminatorMatcher::feed(char c, std::string& released) {
  held_ += c;
  for (;;) {
    bool prefix = false;
    for (std::size_t i = 0; i < terminators_.size(); ++i) {
      if (terminators_[i] == held_) {
        held_.clear();
        return static_cast<int>(i);
      }
      prefix = prefix || starts_with(terminators_[i], held_);
    }
    if (prefix || held_.empty()) return -1;
    released += held_[0];
    held_.erase(0, 1);
  }
}

}  // namespace cellserve::server::tool_calls::detail
