// The Jinja2 lexer with the environment Hugging Face uses for chat templates:
// trim_blocks=True (the first newline after a block or comment tag is removed), lstrip_blocks=True
// (spaces and tabs before a block or comment tag at the start of a line are removed),
// keep_trailing_newline=False (one trailing newline of the source is dropped), newlines normalised
// to "\n", and whitespace control with `-` (strip all whitespace on that side) and `+` (disable
// lstrip/trim on that side). Comments are dropped and {% raw %} sections become plain text.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cellserve::engine::chat {

enum class TokenType {
  Data,           // template text to output as is
  VariableBegin,  // {{
  VariableEnd,    // }}
  BlockBegin,     // {%
  BlockEnd,       // %}
  Name,
  String,    // value: the decoded literal (Python escapes applied)
  Integer,   // int_value
  Float,     // float_value
  Operator,  // value: "+", "//", "==", "(", ...
  Eof,
};

struct Token {
  TokenType type = TokenType::Eof;
  std::string value;
  int64_t int_value = 0;
  double float_value = 0;
  int line = 1;
};

// Tokenizes a whole template. Throws TemplateError (Syntax) with the line for unterminated tags,
// comments and strings, unbalanced brackets and characters that start no token.
std::vector<Token> tokenize(std::string_view source);

// A short description of a token for error messages ("'endfor'", "end of statement block").
std::string describe_token(const Token& token);

}  // namespace cellserve::engine::chat
