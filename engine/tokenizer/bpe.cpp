#include "engine/tokenizer/bpe.h"

#include <algorithm>

#include "engine/tokenizer/pretokenizer.h"
#include "engine/tokenizer/unicode.h"

namespace cellserve::engine::tokenizer {
namespace {

using Symbol = BpeScratch::Symbol;
using Bigram = BpeScratch::Bigram;

// Heap order: lowest rank on top; equal ranks: leftmost (llama.cpp's llm_bigram_bpe::comparator).
bool lower_priority(const Bigram& a, const Bigram& b) {
  return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
}

// The byte-level text of bytes [begin, begin + len) of `word` (what the vocabulary stores).
std::string byte_level_text(std::string_view word, size_t begin, size_t len) {
  std::string s;
  for (size_t i = begin; i < begin + len; ++i) s += byte_to_utf8(static_cast<uint8_t>(word[i]));
  return s;
}

class BpeWord {
 public:
  BpeWord(const Vocabulary& vocab, BpeScratch& scratch) : vocab_(vocab), s_(scratch) {}

  // Merges the bytes of s_.word and appends the resulting tokens.
  void run(std::vector<int32_t>& out) {
    const std::string& word = s_.word;
    if (vocab_.ignore_merges()) {
      // Llama 3 style: a word that is a token as a whole is taken as is.
      if (const int32_t id = vocab_.find(byte_level_text(word, 0, word.size())); id != kNoToken) {
        out.push_back(id);
        return;
      }
    }
    s_.symbols.clear();
    s_.heap.clear();
    const int n = static_cast<int>(word.size());
    for (int i = 0; i < n; ++i) {
      s_.symbols.push_back({i - 1, i + 1 == n ? -1 : i + 1, static_cast<uint32_t>(i), 1,
                            vocab_.byte_level_token(static_cast<uint8_t>(word[static_cast<size_t>(i)]))});
    }
    for (int i = 1; i < n; ++i) add_bigram(i - 1, i);

    while (!s_.heap.empty()) {
      std::pop_heap(s_.heap.begin(), s_.heap.end(), lower_priority);
      const Bigram bigram = s_.heap.back();
      s_.heap.pop_back();
      Symbol& left = s_.symbols[static_cast<size_t>(bigram.left)];
      Symbol& right = s_.symbols[static_cast<size_t>(bigram.right)];
      // Stale: one side was merged away, or the right side grew since the pair was queued.
      if (left.len == 0 || right.len == 0 || left.len + right.len != bigram.size) continue;

      left.len += right.len;
      left.id = bigram.result;
      right.len = 0;
      left.next = right.next;
      if (right.next >= 0) s_.symbols[static_cast<size_t>(right.next)].prev = bigram.left;
      add_bigram(left.prev, bigram.left);
      add_bigram(bigram.left, left.next);
    }

    for (const Symbol& sym : s_.symbols) {
      if (sym.len == 0) continue;
      if (sym.id != kNoToken) {
        out.push_back(sym.id);
        continue;
      }
      // Not a token (a merge whose result is missing from the vocabulary): llama.cpp looks each byte
      // of the byte-level text up as a one-character token and keeps those it finds.
      for (char c : byte_level_text(word, sym.begin, sym.len)) {
        if (const int32_t id = vocab_.find(std::string_view(&c, 1)); id != kNoToken) out.push_back(id);
      }
    }
  }

 private:
  void add_bigram(int left, int right) {
    if (left == -1 || right == -1) return;
    const Symbol& l = s_.symbols[static_cast<size_t>(left)];
    const Symbol& r = s_.symbols[static_cast<size_t>(right)];
    const BpeMerge* merge = nullptr;
    if (l.id != kNoToken && r.id != kNoToken) {
      merge = vocab_.find_merge(l.id, r.id);
    } else if (vocab_.has_text_merges()) {
      merge =
          vocab_.find_merge_text(byte_level_text(s_.word, l.begin, l.len), byte_level_text(s_.word, r.begin, r.len));
    }
    if (merge == nullptr) return;
    s_.heap.push_back({merge->rank, left, right, l.len + r.len, merge->result});
    std::push_heap(s_.heap.begin(), s_.heap.end(), lower_priority);
  }

  const Vocabulary& vocab_;
  BpeScratch& s_;
};

}  // namespace

void bpe_tokenize(const Vocabulary& vocab, std::string_view text, BpeScratch& scratch, std::vector<int32_t>& out) {
  scratch.cpts.clear();
  scratch.word_lengths.clear();
  decode_utf8_lenient(text, scratch.cpts);
  pre_tokenize(vocab.pre_kind(), scratch.cpts, scratch.word_lengths);

  BpeWord word(vocab, scratch);
  size_t begin = 0;
  for (size_t len : scratch.word_lengths) {
    // Words are re-encoded from code points, so malformed input bytes arrive as U+FFFD (as in llama.cpp).
    scratch.word.clear();
    for (size_t i = begin; i < begin + len; ++i) append_utf8(scratch.cpts[i], scratch.word);
    begin += len;
    word.run(out);
  }
}

}  // namespace cellserve::engine::tokenizer
