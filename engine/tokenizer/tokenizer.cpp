#include "engine/tokenizer/tokenizer.h"

#include <cstdio>
#include <cstdlib>

#include "engine/tokenizer/bpe.h"
#include "engine/tokenizer/special_partition.h"
#include "engine/tokenizer/spm.h"
#include "engine/tokenizer/unicode.h"

namespace cellserve::engine::tokenizer {
namespace {

constexpr std::string_view kSpmSpace = "\xE2\x96\x81";  // U+2581, SentencePiece's visible space

std::string replace_all(std::string_view s, std::string_view from, std::string_view to) {
  std::string out;
  out.reserve(s.size());
  size_t pos = 0;
  for (size_t hit; (hit = s.find(from, pos)) != std::string_view::npos; pos = hit + from.size()) {
    out.append(s.substr(pos, hit - pos));
    out.append(to);
  }
  out.append(s.substr(pos));
  return out;
}

// Byte-level text -> bytes (llama.cpp's llama_decode_text). A code point that stands for no byte
// is written as "[UNK_BYTE_0x<hex of its UTF-8>" + the whole token text + "]", as llama.cpp does.
std::string decode_byte_level(const std::string& text) {
  std::string out;
  for (size_t pos = 0; pos < text.size();) {
    const uint32_t cp = next_codepoint_lenient(text, pos);
    if (const auto byte = codepoint_to_byte(cp)) {
      out.push_back(static_cast<char>(*byte));
      continue;
    }
    std::string utf8;
    append_utf8(cp, utf8);
    out += "[UNK_BYTE_0x";
    for (char c : utf8) {
      char hex[4];
      std::snprintf(hex, sizeof hex, "%02x", static_cast<unsigned char>(c));
      out += hex;
    }
    out += text + "]";
  }
  return out;
}

// The piece of `id` as llama_token_to_piece(special=true) renders it.
std::string render_piece(const Vocabulary& v, int32_t id) {
  const TokenData& t = v.token(id);
  if ((t.attr & (token_attr::kUnknown | token_attr::kControl | token_attr::kUserDefined)) != 0) return t.text;
  if ((t.attr & token_attr::kNormal) != 0) {
    return v.type() == VocabType::Spm ? replace_all(t.text, kSpmSpace, " ") : decode_byte_level(t.text);
  }
  if ((t.attr & token_attr::kByte) != 0 && t.text.size() >= 5) {
    // "<0xXX>"
    return std::string(1, static_cast<char>(std::strtol(t.text.substr(3, 2).c_str(), nullptr, 16)));
  }
  return "";  // unused / undefined tokens render as nothing
}

// llama_detokenize's clean_up_tokenization_spaces, applied in place with llama.cpp's index logic
// (including its quirks: the second pass blanks the space it drops, which the next step then sees).
void clean_spaces(std::string& text) {
  size_t total = text.empty() ? 0 : 1;
  const size_t n1 = text.size();
  for (size_t i = 1; i < n1; ++i) {  // " ?", " !", " .", " ," lose the space
    const char x = text[i];
    if (text[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',')) --total;
    text[total++] = x;
  }
  const size_t n2 = total;
  total = n2 ? 1 : 0;
  for (size_t i = 1; i < n2; ++i) {  // " ' " becomes "'"
    const char x = text[i];
    if (x == '\'' && i + 1 < n2 && text[i - 1] == ' ' && text[i + 1] == ' ') {
      --total;
      text[++i] = '\0';
    }
    text[total++] = x;
  }
  const size_t n3 = total;
  total = n3 ? 1 : 0;
  for (size_t i = 1; i < n3; ++i) {  // " 's", " 'm", " 're", " 've" lose the space
    const char x = text[i];
    if (text[i - 1] == ' ' && x == '\'' && i + 1 < n3) {
      const char x1 = text[i + 1];
      if (x1 == 's' || x1 == 'm') {
        --total;
      } else if (x1 != 't' && x1 != 'd' && i + 2 < n3) {
        const char x2 = text[i + 2];
        if ((x1 == 'r' && x2 == 'e') || (x1 == 'v' && x2 == 'e')) --total;
      }
    }
    text[total++] = x;
  }
  text.resize(total);
}

}  // namespace

Result<Tokenizer> Tokenizer::from_gguf(const GgufFile& file, const VocabularyOptions& options) {
  CS_ASSIGN_OR_RETURN(Vocabulary vocab, Vocabulary::load(file, options));
  return Tokenizer(std::move(vocab));
}

Tokenizer::Tokenizer(Vocabulary vocab) : vocab_(std::move(vocab)) {
  pieces_.reserve(static_cast<size_t>(vocab_.n_tokens()));
  for (int32_t id = 0; id < vocab_.n_tokens(); ++id) pieces_.push_back(render_piece(vocab_, id));
}

std::vector<int32_t> Tokenizer::tokenize(std::string_view text, bool add_special, bool parse_special) const {
  return tokenize_impl(text, add_special, parse_special, {});
}

std::vector<int32_t> Tokenizer::tokenize_prompt(std::string_view text, bool add_special,
                                                std::span<const TextSpan> plain_spans) const {
  return tokenize_impl(text, add_special, /*parse_special=*/true, plain_spans);
}

std::vector<int32_t> Tokenizer::tokenize_impl(std::string_view text, bool add_special, bool parse_special,
                                              std::span<const TextSpan> plain_spans) const {
  std::vector<int32_t> out;
  const std::vector<Fragment> fragments = partition_special_tokens(vocab_, text, parse_special, plain_spans);
  const bool add_bos = add_special && vocab_.add_bos() && vocab_.bos() != kNoToken;
  const bool add_eos = add_special && vocab_.add_eos() && vocab_.eos() != kNoToken;
  if (add_bos) out.push_back(vocab_.bos());

  if (vocab_.type() == VocabType::Spm) {
    // The first text run, and every run after a special token, gets SentencePiece's leading space.
    bool prev_special = true;
    std::string run;
    for (const Fragment& f : fragments) {
      if (f.token != kNoToken) {
        out.push_back(f.token);
        prev_special = true;
        continue;
      }
      run.clear();
      if (vocab_.add_space_prefix() && prev_special) run.push_back(' ');
      run.append(text.substr(f.offset, f.length));
      spm_tokenize(vocab_, replace_all(run, " ", kSpmSpace), out);
      prev_special = false;
    }
  } else {
    BpeScratch scratch;
    for (const Fragment& f : fragments) {
      if (f.token != kNoToken)
        out.push_back(f.token);
      else
        bpe_tokenize(vocab_, text.substr(f.offset, f.length), scratch, out);
    }
  }

  if (add_eos) out.push_back(vocab_.eos());
  return out;
}

const std::string& Tokenizer::token_to_piece(int32_t id, bool special) const {
  static const std::string kEmpty;
  if (!vocab_.is_valid(id)) return kEmpty;
  if (!special && (vocab_.attr(id) & (token_attr::kUnknown | token_attr::kControl)) != 0) return kEmpty;
  return pieces_[static_cast<size_t>(id)];
}

std::string Tokenizer::detokenize(std::span<const int32_t> ids, bool remove_special, bool unparse_special) const {
  bool remove_space = vocab_.add_space_prefix();  // undo SPM's leading space
  if (remove_special && vocab_.add_bos() && !ids.empty() && ids.front() == vocab_.bos()) {
    remove_space = false;
    ids = ids.subspan(1);
  }
  if (remove_special && vocab_.add_eos() && !ids.empty() && ids.back() == vocab_.eos()) {
    ids = ids.first(ids.size() - 1);
  }
  std::string text;
  for (int32_t id : ids) {
    std::string_view piece = token_to_piece(id, unparse_special);
    if (remove_space && !piece.empty() && piece.front() == ' ') piece.remove_prefix(1);
    remove_space = false;
    text.append(piece);
  }
  if (vocab_.clean_spaces()) clean_spaces(text);
  return text;
}

}  // namespace cellserve::engine::tokenizer
