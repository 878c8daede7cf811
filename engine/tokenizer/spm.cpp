#include "engine/tokenizer/spm.h"

#include <algorithm>
#include <queue>

#include "engine/tokenizer/unicode.h"

namespace cellserve::engine::tokenizer {
namespace {

// A run of bytes of the input; merged-away symbols have len 0. prev/next link the live symbols.
struct Symbol {
  int prev;
  int next;
  size_t begin;
  size_t len;
};

struct Bigram {
  int left;
  int right;
  float score;
  size_t size;  // bytes of left + right when queued: a later mismatch means the pair is stale
};

// Highest score first; equal scores: leftmost first (llama.cpp's llm_bigram_spm::comparator).
struct BigramOrder {
  bool operator()(const Bigram& l, const Bigram& r) const {
    return l.score < r.score || (l.score == r.score && l.left > r.left);
  }
};

class SpmSession {
 public:
  SpmSession(const Vocabulary& vocab, std::string_view text) : vocab_(vocab), text_(text) {}

  void run(std::vector<int32_t>& out) {
    // One symbol per UTF-8 character, judged by the lead byte alone (clipped at the end).
    for (size_t offs = 0; offs < text_.size();) {
      const size_t len = std::min(utf8_sequence_length(static_cast<uint8_t>(text_[offs])), text_.size() - offs);
      const int index = static_cast<int>(symbols_.size());
      symbols_.push_back({index - 1, offs + len == text_.size() ? -1 : index + 1, offs, len});
      offs += len;
    }
    for (int i = 1; i < static_cast<int>(symbols_.size()); ++i) try_add_bigram(i - 1, i);

    while (!queue_.empty()) {
      const Bigram bigram = queue_.top();
      queue_.pop();
      Symbol& left = symbols_[static_cast<size_t>(bigram.left)];
      Symbol& right = symbols_[static_cast<size_t>(bigram.right)];
      if (left.len == 0 || right.len == 0 || left.len + right.len != bigram.size) continue;

      left.len += right.len;
      right.len = 0;
      left.next = right.next;
      if (right.next >= 0) symbols_[static_cast<size_t>(right.next)].prev = bigram.left;
      try_add_bigram(left.prev, bigram.left);
      try_add_bigram(bigram.left, left.next);
    }

    if (symbols_.empty()) return;
    for (int i = 0; i != -1; i = symbols_[static_cast<size_t>(i)].next) emit(symbols_[static_cast<size_t>(i)], out);
  }

 private:
  std::string_view text_of(const Symbol& s) const { return text_.substr(s.begin, s.len); }

  void try_add_bigram(int left, int right) {
    if (left == -1 || right == -1) return;
    const Symbol& l = symbols_[static_cast<size_t>(left)];
    const Symbol& r = symbols_[static_cast<size_t>(right)];
    const std::string_view joined = text_.substr(l.begin, l.len + r.len);
    const int32_t id = vocab_.find(joined);
    if (id == kNoToken) return;
    queue_.push({left, right, vocab_.token(id).score, joined.size()});
  }

  // A final symbol is a token, or it is a single character the vocabulary lacks: then its bytes.
  // (llama.cpp also consults a reverse-merge map here; every merged symbol is a token, so that map
  // is never reached and is left out.)
  void emit(const Symbol& s, std::vector<int32_t>& out) const {
    const std::string_view text = text_of(s);
    if (const int32_t id = vocab_.find(text); id != kNoToken) {
      out.push_back(id);
      return;
    }
    for (char c : text) {
      const int32_t id = vocab_.byte_fallback_token(static_cast<uint8_t>(c));
      // llama.cpp throws when even the byte is missing; we fall back to <unk> (or drop the byte).
      if (id != kNoToken)
        out.push_back(id);
      else if (vocab_.unk() != kNoToken)
        out.push_back(vocab_.unk());
    }
  }

  const Vocabulary& vocab_;
  std::string_view text_;
  std::vector<Symbol> symbols_;
  std::priority_queue<Bigram, std::vector<Bigram>, BigramOrder> queue_;
};

}  // namespace

void spm_tokenize(const Vocabulary& vocab, std::string_view text, std::vector<int32_t>& out) {
  SpmSession(vocab, text).run(out);
}

}  // namespace cellserve::engine::tokenizer
