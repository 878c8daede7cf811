// MarkedText: text a template rendered, and which of its bytes came from the request's data
// (message contents, roles, names, tool calls, tools, template kwargs) rather than from the
// template itself. The tokenizer keeps special-token text in those bytes plain
// (Tokenizer::tokenize_prompt), so a message cannot forge the template's turn markers.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/text_spans.h"

namespace cellserve::engine::chat {

struct MarkedText {
  std::string text;
  std::vector<TextSpan> user_spans;  // a span list (base/text_spans.h) over `text`

  // Appends `s`, all of it user data or none of it.
  void append(std::string_view s, bool user = false) {
    const size_t at = text.size();
    text.append(s);
    if (user) add_span(user_spans, at, text.size());
  }
  // Appends `s` whose user data is `spans` (relative to `s`).
  void append(std::string_view s, std::span<const TextSpan> spans) {
    const size_t at = text.size();
    text.append(s);
    append_spans(user_spans, spans, at);
  }
};

}  // namespace cellserve::engine::chat
