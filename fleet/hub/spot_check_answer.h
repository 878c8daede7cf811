// What spot checks compare (fleet/hub/spot_checks.h): which requests may be checked, the answer
// text read from a relayed response (streamed SSE or one JSON body, chat or completions), the
// part of it compared, and how a disagreement is decided by a third device.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <boost/json/object.hpp>

#include "fleet/hub/agreement_book.h"

namespace cellserve::fleet {

// The most response bytes the hub keeps of an answer to compare it: a longer response (about
// 400 streamed tokens, or 64 KiB of whole-answer JSON) is not checked.
inline constexpr size_t kMaxComparedResponseBytes = 256 * 1024;

// Whether an answer to `body` is reproducible on another device: greedy (temperature 0) or
// seeded, and one choice (n absent or 1).
bool spot_checkable(const boost::json::object& body);
// Whether the deployment endpoint's path after /v1 is one whose answers are compared.
bool spot_checked_endpoint(std::string_view rest);

// The first choice's text of a 200 response `body`: the concatenated `delta.content` (chat) or
// `text` (completions) of its SSE events, or `message.content` / `text` of one JSON answer.
// nullopt when the body is neither (an error, a truncated stream).
std::optional<std::string> answer_text(std::string_view body);

// The part of `text` compared under a deployment's verify_agreement: "text": all of it;
// "first_line": its first non-blank line, without surrounding blanks.
std::string compared_part(std::string_view text, std::string_view agreement);

// The outcomes of one spot check: the first device's answer `a`, the second's `b`, and when
// they differ the tie-breaking third's `c` (nullopt: no third device answered).
struct CheckVerdict {
  CheckOutcome first = CheckOutcome::Unresolved;
  CheckOutcome second = CheckOutcome::Unresolved;
  std::optional<CheckOutcome> third;  // set when a third answer took part
  bool needs_third = false;           // a and b differ: ask a third device
};
CheckVerdict decide(const std::string& a, const std::string& b, const std::optional<std::string>& c);

}  // namespace cellserve::fleet
