#include "engine/simulated/answer_text.h"

#include <array>

namespace cellserve::engine::simulated {
namespace {

constexpr std::array<const char*, 64> kWords = {
    "amber",  "river",  "quietly", "follows", "the",   "stone",   "bridge",  "under",   "a",       "bright", "morning",
    "while",  "small",  "birds",   "gather",  "near",  "old",     "oak",     "trees",   "and",     "wind",   "carries",
    "soft",   "rain",   "across",  "green",   "hills", "toward",  "distant", "towns",   "where",   "people", "build",
    "simple", "houses", "from",    "clay",    "wood",  "glass",   "paper",   "every",   "evening", "lamps",  "glow",
    "over",   "calm",   "water",   "boats",   "drift", "slowly",  "past",    "harbors", "full",    "of",     "nets",
    "ropes",  "salt",   "stories", "told",    "by",    "patient", "keepers", "many",    "time"};

// splitmix64's finalizer: a well-mixed 64-bit hash step.
uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

size_t word_of(uint64_t seed, uint32_t word) { return mix(seed ^ (uint64_t{word} << 32 | word)) % kWords.size(); }

}  // namespace

AnswerText::AnswerText(const tokenizer::Tokenizer& tok) : end_token_(tok.eos()) {
  for (const char* w : kWords) {
    const std::string word = w;
    first_.push_back(tok.tokenize(word, /*add_special=*/false, /*parse_special=*/false));
    middle_.push_back(tok.tokenize(" " + word, false, false));
    last_.push_back(tok.tokenize(" " + word + ".", false, false));
  }
}

AnswerState AnswerText::start() { return AnswerState{0x63656C6C73657276ull, 0, 0}; }

uint32_t AnswerText::answer_words(uint64_t seed) { return 8 + static_cast<uint32_t>(mix(seed) % 57); }

const std::vector<int32_t>& AnswerText::pieces(const AnswerState& s) const {
  const size_t w = word_of(s.seed, s.word);
  if (s.word == 0) return first_[w];
  return s.word + 1 == answer_words(s.seed) ? last_[w] : middle_[w];
}

int32_t AnswerText::next_token(const AnswerState& s) const {
  if (s.word >= answer_words(s.seed)) return end_token_;
  const std::vector<int32_t>& p = pieces(s);
  return s.piece < p.size() ? p[s.piece] : end_token_;
}

AnswerState AnswerText::after(const AnswerState& s, int32_t token, bool* continued) const {
  *continued = s.word < answer_words(s.seed) && token == next_token(s);
  if (!*continued) return AnswerState{mix(s.seed ^ static_cast<uint32_t>(token)), 0, 0};
  AnswerState n = s;
  if (++n.piece >= pieces(s).size()) {
    ++n.word;
    n.piece = 0;
  }
  return n;
}

std::string AnswerText::answer(const AnswerState& s, const tokenizer::Tokenizer& tok) const {
  std::vector<int32_t> ids;
  AnswerState at = s;
  for (bool continued = true; continued;) {
    const int32_t t = next_token(at);
    if (t == end_token_) break;
    ids.push_back(t);
    at = after(at, t, &continued);
  }
  return tok.detokenize(ids, /*remove_special=*/false, /*unparse_special=*/false);
}

}  // namespace cellserve::engine::simulated
