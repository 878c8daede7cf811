// Pieces of GBNF text (llama.cpp's grammar syntax: `name ::= ...`, "literals", [classes], groups,
// | * + ?), escaped so that llama.cpp's parser reads them back exactly.
#pragma once

#include <string>
#include <string_view>

namespace cellserve::server::tool_calls::detail {

// "text" with ", \, control characters escaped (other UTF-8 is written as is).
std::string gbnf_literal(std::string_view text);

// Rules `rule ::= ...` (and helpers `rule-0`, `rule-1`, ...) matching every string that does not
// contain `forbidden` (ASCII), one rule a line. They track how much of `forbidden` the text ends
// with (its Knuth-Morris-Pratt automaton), so the text may end with a proper prefix of it: a
// closing tag `forbidden` can follow directly.
std::string text_without_rules(std::string_view rule, std::string_view forbidden);

}  // namespace cellserve::server::tool_calls::detail
