// Constrained decoding (OpenAI response_format json_object / json_schema; GBNF grammars; regexes).
//
// An OutputConstraint is compiled once from a JSON Schema (or "any JSON object"), a GBNF grammar
// or a regex, and is immutable.
// A ConstrainedSequence follows one generation: before each sampling step it masks the logits
// of every token whose bytes cannot continue a document that is valid JSON and validates
// against the schema; after sampling, accept() advances it. When the document is complete only
// end-of-generation tokens stay allowed. When the remaining token budget gets short, only
// tokens that move toward the shortest completion are allowed, so the document always closes
// within max_tokens (given byte tokens for every needed character).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/value.hpp>

#include "base/status.h"
#include "engine/grammar/grammar_limits.h"
#include "engine/tokenizer/tokenizer.h"

namespace cellserve::engine::grammar {

struct SchemaNode;  // compiled schema (private to the implementation)

class OutputConstraint {
 public:
  // Any JSON object (response_format {"type": "json_object"}), with the default limits.
  static std::shared_ptr<const OutputConstraint> any_object();
  // A JSON Schema (response_format json_schema's "schema"). InvalidArgument for a malformed
  // schema (not an object/boolean, a keyword of the wrong type, a dangling $ref), one no value
  // satisfies, or one beyond a compile-time limit of `limits` (the message names the limit and
  // its value); Unimplemented naming a keyword outside the supported subset (docs/grammar.md).
  // The work done is bounded by `limits` too. Identical subschemas are compiled once, so
  // identical anyOf branches count (and cost) as one.
  static Result<std::shared_ptr<const OutputConstraint>> from_schema(const boost::json::value& schema,
                                                                     const GrammarLimits& limits = {});
  // A GBNF grammar (llama.cpp's syntax; the request field `grammar`), starting at rule `root`; the
  // document is any string it generates (docs/grammar.md, "GBNF grammars"). A rule the text uses
  // but does not define is looked up in `externals`: one JSON value valid against that constraint's
  // schema (the server's tool-call grammars embed schemas so); the result keeps them alive.
  // InvalidArgument with the line and column for a syntax error, an undefined rule (naming it), a
  // rule defined twice, left recursion (naming the rule), a root that generates no string or an
  // invalid code point; InvalidArgument when there is no `root`, or naming the limit for a grammar
  // beyond `limits` (max_grammar_bytes, max_grammar_elements, max_grammar_depth); Unimplemented for
  // llama.cpp's token terminals (<[id]>, <token>). Same mask/accept/complete semantics as schemas.
  static Result<std::shared_ptr<const OutputConstraint>> from_gbnf(
      std::string_view grammar, const GrammarLimits& limits = {},
      const std::map<std::string, std::shared_ptr<const OutputConstraint>>& externals = {});

  // A regex document (the regex response format): the whole output matches `pattern` (the
  // regex_compiler.h subset of ECMA-262, docs/grammar.md), as UTF-8. InvalidArgument with the
  // byte offset for a malformed pattern, for one that matches nothing, or naming the limit
  // (max_regex_bytes, max_dfa_states); Unimplemented naming the construct (backreferences,
  // lookaround, ...). Same mask/accept/complete semantics as schemas: complete once the text
  // matches, and it may go on while a longer text can match.
  static Result<std::shared_ptr<const OutputConstraint>> from_regex(std::string_view pattern,
                                                                    const GrammarLimits& limits = {});

  const SchemaNode& root() const { return *root_; }
  // The limits it was compiled under; its sequences' masks follow the mask-time ones.
  const GrammarLimits& limits() const { return limits_; }

  OutputConstraint(std::shared_ptr<const SchemaNode> root, const GrammarLimits& limits)
      : root_(std::move(root)), limits_(limits) {}

 private:
  std::shared_ptr<const SchemaNode> root_;
  GrammarLimits limits_;
};

// The vocabulary as byte strings, indexed for fast masking; built once per tokenizer and shared
// by all sequences (immutable, thread-safe).
class TokenIndex;
// `special_text`: control and user-defined tokens are text too (TokenIndex in token_index.h), for
// answers whose text keeps them (tool calls).
std::shared_ptr<const TokenIndex> build_token_index(const tokenizer::Tokenizer& tok, bool special_text = false);

// One sequence's position in the document. Not thread-safe (mask_logits uses scratch buffers
// held by the sequence); OutputConstraint and TokenIndex may be shared by any number of sequences.
class ConstrainedSequence {
 public:
  ConstrainedSequence(std::shared_ptr<const OutputConstraint> constraint, std::shared_ptr<const TokenIndex> index);
  ~ConstrainedSequence();
  ConstrainedSequence(ConstrainedSequence&&) noexcept;
  ConstrainedSequence& operator=(ConstrainedSequence&&) noexcept;

  // Sets to -infinity the logit of every token that may not come next. `remaining_tokens`: how
  // many more tokens may be generated including this one. A token is kept when its bytes continue
  // the document and, after it, remaining_tokens - 1 still covers the shortest completion plus an
  // end token. The completion is counted in bytes, one token each at worst; when no token fits
  // that way, the tokens that shorten the completion most are kept instead (a budget of 10
  // tokens still writes the 13 bytes of "RISK_LEVEL: 5", 6 tokens in Qwen's vocabulary, or as much as fits).
  // End-of-generation tokens are kept once complete() (then the only other tokens
  // that can continue are digits of a top-level number or the rest of a top-level enum value such
  // as 10 after 1); before, they never are, except when no token shortens the completion (a vocabulary without
  // the needed bytes): then the end tokens are kept rather than nothing, and accept() takes one.
  // Control, unknown, unused and user-defined tokens are never kept. Logits past the vocabulary are masked. Costs
  // O(bytes of the vocabulary's prefix tree that the matcher can enter); docs/grammar.md.
  // InvalidArgument, naming the limit, when the mask needs more matcher work than the constraint's
  // limits().max_mask_work or more than max_live_threads threads: the walk stops there (so no
  // mask costs more than about that budget), every logit is masked and the sequence cannot go on.
  Status mask_logits(std::span<float> logits, int64_t remaining_tokens) const;
  // The matcher work (GrammarLimits::max_mask_work units) the last mask_logits call did.
  int64_t last_mask_work() const;
  // Advances over `token`. InvalidArgument when the token was not allowed (nothing changes): its
  // bytes cannot continue the document, it is a control token, it follows an accepted end token,
  // or it is an end token before completion (outside the fallback above).
  // The budget is not checked here.
  Status accept(int32_t token);
  // True when the bytes so far form a complete valid document (an end token may follow).
  bool complete() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace cellserve::engine::grammar
