// Byte-at-a-time matching of fixed markup strings.
//
// LiteralMatcher: which of a few literals the input spells (none may be a prefix of another), e.g.
// "<parameter=" or "</function>" after a parameter.
// TerminatorMatcher: reads text up to the first of a few terminators, releasing every byte as soon
// as it cannot be the start of one (so text streams while only a possible terminator prefix waits).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace cellserve::server::tool_calls::detail {

class LiteralMatcher {
 public:
  static constexpr int kPartial = -1;   // a proper prefix of some literal so far
  static constexpr int kMismatch = -2;  // the byte spells none of them (the state is unchanged)

  explicit LiteralMatcher(std::vector<std::string_view> literals = {}) : literals_(std::move(literals)) {}
  void reset(std::vector<std::string_view> literals);
  void reset() { seen_.clear(); }

  // The index of the literal `c` completes (the matcher then restarts), kPartial or kMismatch.
  int feed(char c);
  bool partial() const { return !seen_.empty(); }

 private:
  std::vector<std::string_view> literals_;
  std::string seen_;
};

class TerminatorMatcher {
 public:
  explicit TerminatorMatcher(std::vector<std::string_view> terminators) : terminators_(std::move(terminators)) {}
  void reset() { held_.clear(); }

  // Appends to `released` the bytes known to precede any terminator; returns the index of the
  // terminator `c` completes, or -1.
  int feed(char c, std::string& released);
  // The bytes held back because they may start a terminator.
  const std::string& held() const { return held_; }

 private:
  std::vector<std::string_view> terminators_;
  std::string held_;
};

}  // namespace cellserve::server::tool_calls::detail
