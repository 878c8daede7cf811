#include "engine/tokenizer/pretokenizer.h"

#include <array>

#include "engine/tokenizer/unicode.h"

namespace cellserve::engine::tokenizer {
namespace {

constexpr uint32_t kOutOfRange = 0xFFFFFFFF;

// The scan state shared by every kind: the code points, and where the current word began.
// Positions past the end read as kOutOfRange with empty flags, as llama.cpp's _get_cpt/_get_flags do.
class Scanner {
 public:
  Scanner(std::span<const uint32_t> cpts, std::vector<size_t>& lengths) : cpts_(cpts), lengths_(lengths) {}

  size_t size() const { return cpts_.size(); }
  uint32_t cp(size_t pos) const { return pos < cpts_.size() ? cpts_[pos] : kOutOfRange; }
  CodepointFlags flags(size_t pos) const { return pos < cpts_.size() ? codepoint_flags(cpts_[pos]) : CodepointFlags{}; }

  // Ends the current word at `end` (nothing is emitted for an empty word); returns its length.
  size_t cut(size_t end) {
    const size_t len = end - word_begin_;
    if (len > 0) lengths_.push_back(len);
    word_begin_ = end;
    return len;
  }

 private:
  std::span<const uint32_t> cpts_;
  std::vector<size_t>& lengths_;
  size_t word_begin_ = 0;
};

bool is_cr_or_lf(uint32_t cp) { return cp == '\r' || cp == '\n'; }

// 's 't 'm 'd 're 've 'll at `pos` (which holds the apostrophe): the contraction's length, or 0.
// `fold` applies the case-insensitive match of the (?i:...) forms.
size_t contraction_length(const Scanner& s, size_t pos, bool fold) {
  if (pos + 1 >= s.size()) return 0;
  auto get = [&](size_t p) { return fold ? to_lower(s.cp(p)) : s.cp(p); };
  const uint32_t c1 = get(pos + 1);
  if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd') return 2;
  if (pos + 2 >= s.size()) return 0;
  const uint32_t c2 = get(pos + 2);
  if ((c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l')) return 3;
  return 0;
}

// Whitespace: \s*[\r\n]+ | \s+(?!\S) | \s+ (the first only when `newline_rule`). Returns false when
// `pos` does not start a whitespace run.
bool scan_whitespace(Scanner& s, size_t& pos, bool newline_rule) {
  size_t n_ws = 0;
  size_t last_cr_lf_end = 0;
  while (s.flags(pos + n_ws).is_whitespace()) {
    if (is_cr_or_lf(s.cp(pos + n_ws))) last_cr_lf_end = pos + n_ws + 1;
    ++n_ws;
  }
  if (newline_rule && last_cr_lf_end > 0) {
    pos = last_cr_lf_end;  // \s*[\r\n]+ : up to and including the last CR/LF of the run
  } else if (n_ws > 1 && s.cp(pos + n_ws) != kOutOfRange) {
    pos += n_ws - 1;  // \s+(?!\S) : leave the last space to prefix the next word
  } else if (n_ws > 0) {
    pos += n_ws;  // \s+
  } else {
    return false;
  }
  s.cut(pos);
  return true;
}

// GPT-2 (unicode_regex_split_custom_gpt2).
void split_gpt2(Scanner& s) {
  for (size_t pos = 0; pos < s.size();) {
    const uint32_t c = s.cp(pos);
    if (c == '\'') {
      if (const size_t len = contraction_length(s, pos, /*fold=*/false)) {
        pos += s.cut(pos + len);
        continue;
      }
    }
    // One optional leading space, then a run of one class.
    CodepointFlags f2 = c == ' ' ? s.flags(pos + 1) : s.flags(pos);
    auto other = [](CodepointFlags f) { return !(f.is_whitespace() || f.is_letter() || f.is_number()) && f.any(); };
    if (f2.is_letter() || f2.is_number() || other(f2)) {
      const auto same_class = [&](CodepointFlags f) {
        return f2.is_letter() ? f.is_letter() : f2.is_number() ? f.is_number() : other(f);
      };
      const CodepointFlags first = f2;
      pos += (c == ' ');
      for (CodepointFlags f = first; same_class(f);) f = s.flags(++pos);
      s.cut(pos);
      continue;
    }
    if (scan_whitespace(s, pos, /*newline_rule=*/false)) continue;
    s.cut(++pos);  // no rule matched: the code point is a word by itself
  }
}

// Llama 3 / Qwen2 / Qwen3.5 (unicode_regex_split_custom_llama3 / _qwen2 / _qwen35).
void split_llama_family(Scanner& s, size_t max_digits, bool marks_are_letters) {
  const auto wordish = [&](CodepointFlags f) { return f.is_letter() || (marks_are_letters && f.is_mark()); };
  const auto other = [&](CodepointFlags f) {
    return !(f.is_whitespace() || f.is_letter() || f.is_number() || (marks_are_letters && f.is_mark()));
  };
  for (size_t pos = 0; pos < s.size();) {
    const uint32_t c = s.cp(pos);
    const CodepointFlags f = s.flags(pos);

    // (?i:'s|'t|'re|'ve|'m|'ll|'d)
    if (c == '\'') {
      if (const size_t len = contraction_length(s, pos, /*fold=*/true)) {
        pos += s.cut(pos + len);
        continue;
      }
    }
    // [^\r\n\p{L}\p{N}]?\p{L}+ : one leading code point of any other kind (a space, punctuation) joins.
    if (!(is_cr_or_lf(c) || f.is_number()) && (wordish(f) || wordish(s.flags(pos + 1)))) {
      ++pos;
      while (wordish(s.flags(pos))) ++pos;
      s.cut(pos);
      continue;
    }
    // \p{N} or \p{N}{1,3}: digit runs cut every `max_digits` from the left.
    if (f.is_number()) {
      size_t group_begin = pos;
      while (s.flags(pos).is_number()) {
        if (++pos - group_begin >= max_digits) {
          s.cut(pos);
          group_begin = pos;
        }
      }
      s.cut(pos);
      continue;
    }
    // " ?[^\s\p{L}\p{N}]+[\r\n]*". llama.cpp tests the current code point's flags (not the one after
    // the space) for being inside the text, which is always true here.
    CodepointFlags f2 = c == ' ' ? s.flags(pos + 1) : f;
    if (other(f2) && f.any()) {
      pos += (c == ' ');
      while (other(f2) && f2.any()) f2 = s.flags(++pos);
      while (is_cr_or_lf(s.cp(pos))) ++pos;
      s.cut(pos);
      continue;
    }
    if (scan_whitespace(s, pos, /*newline_rule=*/true)) continue;
    s.cut(++pos);
  }
}

struct PreTokenizerName {
  const char* name;
  PreTokenizerInfo info;
};

// The names llama.cpp's llama_vocab::impl::load maps onto these four regexes, with the flags it sets.
constexpr PreTokenizerInfo kQwen2{PreTokenizerKind::Qwen2, false, false, false};
constexpr PreTokenizerInfo kQwen2Clean{PreTokenizerKind::Qwen2, true, false, false};
constexpr PreTokenizerInfo kLlama3{PreTokenizerKind::Llama3, true, true, true};
constexpr PreTokenizerInfo kLlama3Plain{PreTokenizerKind::Llama3, true, false, false};
constexpr PreTokenizerInfo kGpt2{PreTokenizerKind::Gpt2, true, false, false};
constexpr PreTokenizerInfo kGpt2NoClean{PreTokenizerKind::Gpt2, false, false, false};
constexpr std::array<PreTokenizerName, 37> kPreTokenizers = {{
    {"qwen2", kQwen2},
    {"deepseek-r1-qwen", kQwen2},
    {"kormo", kQwen2},
    {"f2llmv2", kQwen2},
    {"hunyuan", kQwen2},
    {"solar-open", kQwen2},
    {"grok-2", kQwen2},
    {"stablelm2", kQwen2Clean},
    {"megrez", kQwen2Clean},
    {"qwen35", {PreTokenizerKind::Qwen35, false, false, false}},
    {"llama3", kLlama3},
    {"llama-v3", kLlama3},
    {"llama-bpe", kLlama3},
    {"falcon3", kLlama3},
    {"falcon-h1", kLlama3},
    {"pixtral", kLlama3},
    {"midm-2.0", kLlama3},
    {"lfm2", kLlama3},
    {"jina-v5-nano", kLlama3},
    {"dbrx", kLlama3Plain},
    {"smaug-bpe", kLlama3Plain},
    {"gpt-2", kGpt2},
    {"phi-2", kGpt2},
    {"jina-es", kGpt2},
    {"jina-de", kGpt2},
    {"gigachat", kGpt2},
    {"jina-v2-es", kGpt2},
    {"jina-v2-de", kGpt2},
    {"a.x-4.0", kGpt2},
    {"mellum", kGpt2},
    {"modern-bert", kGpt2},
    {"exaone4", kGpt2},
    {"mpt", kGpt2},
    {"olmo", kGpt2},
    {"jais", kGpt2},
    {"trillion", kGpt2NoClean},
    {"granite-docling", kGpt2NoClean},
}};

}  // namespace

std::optional<PreTokenizerInfo> find_pre_tokenizer(std::string_view pre_name) {
  for (const auto& p : kPreTokenizers) {
    if (pre_name == p.name) return p.info;
  }
  return std::nullopt;
}

void pre_tokenize(PreTokenizerKind kind, std::span<const uint32_t> cpts, std::vector<size_t>& lengths) {
  Scanner s(cpts, lengths);
  switch (kind) {
    case PreTokenizerKind::Gpt2:
      split_gpt2(s);
      break;
    case PreTokenizerKind::Llama3:
      split_llama_family(s, 3, false);
      break;
    case PreTokenizerKind::Qwen2:
      split_llama_family(s, 1, false);
      break;
    case PreTokenizerKind::Qwen35:
      split_llama_family(s, 1, true);
      break;
  }
}

std::vector<std::string> pre_tokenize_text(PreTokenizerKind kind, std::string_view text) {
  std::vector<uint32_t> cpts;
  decode_utf8_lenient(text, cpts);
  std::vector<size_t> lengths;
  pre_tokenize(kind, cpts, lengths);
  std::vector<std::string> words;
  size_t begin = 0;
  for (size_t len : lengths) {
    std::string& w = words.emplace_back();
    for (size_t i = begin; i < begin + len; ++i) append_utf8(cpts[i], w);
    begin += len;
  }
  return words;
}

}  // namespace cellserve::engine::tokenizer
