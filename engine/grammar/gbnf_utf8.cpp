// Code point sets -> UTF-8 byte tries (gbnf_utf8.h).
#include "engine/grammar/gbnf_utf8.h"

#include <algorithm>
#include <map>
#include <utility>

namespace cellserve::engine::grammar {

namespace {

constexpr uint32_t kMaxCodePoint = 0x10FFFF;
constexpr CodePointRange kSurrogates{0xD800, 0xDFFF};

// The code points encoded with 1, 2, 3 and 4 bytes, and the lead byte each length adds to
// (code point >> 6 * (length - 1)).
struct Utf8Length {
  uint32_t first, last;
  uint8_t lead_base;
};
constexpr Utf8Length kLengths[] = {
    {0, 0x7F, 0x00}, {0x80, 0x7FF, 0xC0}, {0x800, 0xFFFF, 0xE0}, {0x10000, 0x10FFFF, 0xF0}};

class TrieBuilder {
 public:
  Utf8Trie build(const std::vector<CodePointRange>& set) {
    trie_.nodes.emplace_back();  // the root is node 0
    std::vector<Utf8Edge> root;
    for (int len = 1; len <= 4; ++len) {
      const Utf8Length& l = kLengths[len - 1];
      std::vector<CodePointRange> part;
      for (const CodePointRange& r : set) {
        const uint32_t first = std::max(r.first, l.first), last = std::min(r.last, l.last);
        if (first <= last) part.push_back({first, last});
      }
      if (!part.empty()) edges(part, len - 1, l.lead_base, root);
    }
    trie_.nodes[0] = std::move(root);
    return std::move(trie_);
  }

 private:
  // Appends the edges for the code points `set` (offsets within the current block), whose byte
  // here is base + (offset >> 6k) and which `k` continuation bytes follow.
  void edges(const std::vector<CodePointRange>& set, int k, uint8_t base, std::vector<Utf8Edge>& out) {
    if (k == 0) {
      for (const CodePointRange& r : set)
        out.push_back({static_cast<uint8_t>(base + r.first), static_cast<uint8_t>(base + r.last), -1});
      return;
    }
    const uint32_t shift = 6 * static_cast<uint32_t>(k);
    // The pieces of `set` under each byte value, in byte order (at most 64 values per block).
    std::vector<std::pair<uint32_t, std::vector<CodePointRange>>> under;
    for (const CodePointRange& r : set) {
      for (uint32_t v = r.first >> shift; v <= r.last >> shift; ++v) {
        const uint32_t block = v << shift, block_last = block + ((1u << shift) - 1);
        const CodePointRange piece{std::max(r.first, block) - block, std::min(r.last, block_last) - block};
        if (under.empty() || under.back().first != v) under.emplace_back(v, std::vector<CodePointRange>{});
        under.back().second.push_back(piece);
      }
    }
    for (const auto& [v, pieces] : under) {
      const int32_t child = node(pieces, k - 1);
      const auto byte = static_cast<uint8_t>(base + v);
      if (!out.empty() && out.back().next == child && out.back().hi + 1 == byte) {
        out.back().hi = byte;  // the same continuations as the byte before: one range
      } else {
        out.push_back({byte, byte, child});
      }
    }
  }

  // The continuation node for `set` (offsets) followed by `k` more bytes; equal ones are shared.
  int32_t node(const std::vector<CodePointRange>& set, int k) {
    auto key = std::make_pair(k, set);
    if (const auto it = memo_.find(key); it != memo_.end()) return it->second;
    const auto id = static_cast<int32_t>(trie_.nodes.size());
    trie_.nodes.emplace_back();
    memo_.emplace(std::move(key), id);
    std::vector<Utf8Edge> out;
    edges(set, k, 0x80, out);
    trie_.nodes[static_cast<size_t>(id)] = std::move(out);
    return id;
  }

  Utf8Trie trie_;
  std::map<std::pair<int, std::vector<CodePointRange>>, int32_t> memo_;
};

}  // namespace

std::vector<CodePointRange> normalize_class(std::vector<CodePointRange> ranges, bool negated) {
  std::sort(ranges.begin(), ranges.end());
  std::vector<CodePointRange> merged;
  for (const CodePointRange& r : ranges) {
    if (!merged.empty() && r.first <= merged.back().last + 1) {
      merged.back().last = std::max(merged.back().last, r.last);
    } else {
      merged.push_back(r);
    }
  }
  if (negated) {
    std::vector<CodePointRange> complement;
    uint32_t next = 0;  // the first code point not yet covered
    for (const CodePointRange& r : merged) {
      if (r.first > next) complement.push_back({next, r.first - 1});
      next = r.last + 1;
    }
    if (next <= kMaxCodePoint) complement.push_back({next, kMaxCodePoint});
    merged = std::move(complement);
  }
  std::vector<CodePointRange> out;
  for (const CodePointRange& r : merged) {
    if (r.last < kSurrogates.first || r.first > kSurrogates.last) {
      out.push_back(r);
      continue;
    }
    if (r.first < kSurrogates.first) out.push_back({r.first, kSurrogates.first - 1});
    if (r.last > kSurrogates.last) out.push_back({kSurrogates.last + 1, r.last});
  }
  return out;
}

Utf8Trie utf8_trie(const std::vector<CodePointRange>& set) { return TrieBuilder().build(set); }

}  // namespace cellserve::engine::grammar
