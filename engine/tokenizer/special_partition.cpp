#include "engine/tokenizer/special_partition.h"

#include <cctype>

namespace cellserve::engine::tokenizer {
namespace {

bool is_c_space(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

bool is_gated(uint32_t attr) { return (attr & (token_attr::kControl | token_attr::kUnknown)) != 0; }

// Splits the text fragment `f` at the occurrences of token `id` and appends the parts to `out`.
// Occurrences of a control/unknown token that touch `plain_spans` are skipped (searching goes on
// one byte later, so an overlapping occurrence outside the spans is still found).
void split_fragment(const Vocabulary& vocab, std::string_view text, int32_t id, const Fragment& f,
                    std::span<const TextSpan> plain_spans, std::vector<Fragment>& out) {
  const std::string& needle = vocab.token(id).text;
  const uint32_t attr = vocab.attr(id);
  const bool gated = is_gated(attr) && !plain_spans.empty();
  size_t begin = f.offset;
  size_t search = begin;
  const size_t end = f.offset + f.length;
  while (true) {
    const size_t match = text.substr(0, end).find(needle, search);
    if (match == std::string_view::npos) {
      if (end > begin) out.push_back({kNoToken, begin, end - begin});
      return;
    }
    if (gated && overlaps(plain_spans, match, match + needle.size())) {
      search = match + 1;
      continue;
    }
    size_t left_len = match - begin;
    if ((attr & token_attr::kLstrip) != 0) {
      while (left_len > 0 && is_c_space(text[begin + left_len - 1])) --left_len;
    }
    if (left_len > 0) out.push_back({kNoToken, begin, left_len});
    out.push_back({id, 0, 0});
    begin = match + needle.size();
    if ((attr & token_attr::kRstrip) != 0) {
      while (begin < end && is_c_space(text[begin])) ++begin;
    }
    search = begin;
  }
}

}  // namespace

std::vector<Fragment> partition_special_tokens(const Vocabulary& vocab, std::string_view text, bool parse_special,
                                               std::span<const TextSpan> plain_spans) {
  std::vector<Fragment> fragments;
  if (text.empty()) return fragments;
  fragments.push_back({kNoToken, 0, text.size()});
  std::vector<Fragment> next;
  for (int32_t id : vocab.special_tokens()) {
    if (!parse_special && is_gated(vocab.attr(id))) continue;
    // A token that does not occur in the whole text occurs in no fragment of it.
    if (text.find(vocab.token(id).text) == std::string_view::npos) continue;
    next.clear();
    for (const Fragment& f : fragments) {
      if (f.token != kNoToken)
        next.push_back(f);
      else
        split_fragment(vocab, text, id, f, plain_spans, next);
    }
    fragments.swap(next);
  }
  return fragments;
}

}  // namespace cellserve::engine::tokenizer
