// A reference for the GBNF tests, independent of engine/grammar: random grammars as a small tree
// (rendered to GBNF text with random layout), a memoised recogniser over code points that reads
// the tree directly, a random sampler of the language, and productivity.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace cellserve::engine::grammar::testing {

inline std::string utf8(char32_t c) {
  std::string s;
  const auto u = static_cast<uint32_t>(c);
  if (u < 0x80) {
    s += static_cast<char>(u);
  } else if (u < 0x800) {
    s += static_cast<char>(0xC0 | (u >> 6));
    s += static_cast<char>(0x80 | (u & 0x3F));
  } else if (u < 0x10000) {
    s += static_cast<char>(0xE0 | (u >> 12));
    s += static_cast<char>(0x80 | ((u >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (u & 0x3F));
  } else {
    s += static_cast<char>(0xF0 | (u >> 18));
    s += static_cast<char>(0x80 | ((u >> 12) & 0x3F));
    s += static_cast<char>(0x80 | ((u >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (u & 0x3F));
  }
  return s;
}
inline std::string utf8(const std::u32string& s) {
  std::string out;
  for (char32_t c : s) out += utf8(c);
  return out;
}

struct RefItem;
using RefSeq = std::vector<RefItem>;
using RefAlts = std::vector<RefSeq>;

struct RefItem {
  enum Kind { Lit, Cls, Ref, Group } kind = Lit;
  std::u32string lit;
  bool negated = false;  // Cls
  std::vector<std::pair<char32_t, char32_t>> ranges;
  bool dot = false;  // Cls written as `.`
  int rule = -1;
  RefAlts group;
  int min = 1, max = 1;  // max -1: unbounded
  std::string op;        // the repetition as written ("" when none)
};

struct RefGrammar {
  std::vector<std::string> names;  // names[0] == "root"
  std::vector<RefAlts> rules;
};

// Recognises whole strings (at most 62 code points): ends(x, p) is the set of positions where a
// match of x starting at p can end, as a bit mask; rules are memoised per start position.
class RefRecognizer {
 public:
  RefRecognizer(const RefGrammar& g, std::u32string text) : g_(g), text_(std::move(text)) {}
  bool full() { return (rule_ends(0, 0) >> text_.size()) & 1; }

 private:
  using Mask = uint64_t;
  Mask rule_ends(int r, size_t p) {
    const auto key = std::make_pair(r, p);
    if (const auto it = memo_.find(key); it != memo_.end()) return it->second;
    memo_[key] = 0;  // re-entered at the same position: left recursion, which the generator avoids
    const Mask m = alts_ends(g_.rules[static_cast<size_t>(r)], p);
    memo_[key] = m;
    return m;
  }
  Mask alts_ends(const RefAlts& alts, size_t p) {
    Mask m = 0;
    for (const RefSeq& s : alts) m |= seq_ends(s, p);
    return m;
  }
  Mask seq_ends(const RefSeq& seq, size_t p) {
    Mask at = Mask{1} << p;
    for (const RefItem& item : seq) {
      Mask next = 0;
      for (size_t q = 0; q <= text_.size(); ++q)
        if ((at >> q) & 1) next |= item_ends(item, q);
      at = next;
    }
    return at;
  }
  Mask base_ends(const RefItem& item, size_t p) {
    switch (item.kind) {
      case RefItem::Lit:
        return p + item.lit.size() <= text_.size() && text_.compare(p, item.lit.size(), item.lit) == 0
                   ? Mask{1} << (p + item.lit.size())
                   : 0;
      case RefItem::Cls: {
        if (p >= text_.size()) return 0;
        bool in = false;
        for (const auto& [lo, hi] : item.ranges) in |= text_[p] >= lo && text_[p] <= hi;
        return in != item.negated ? Mask{1} << (p + 1) : 0;
      }
      case RefItem::Ref:
        return rule_ends(item.rule, p);
      case RefItem::Group:
        return alts_ends(item.group, p);
    }
    return 0;
  }
  Mask item_ends(const RefItem& item, size_t p) {
    Mask result = item.min == 0 ? Mask{1} << p : 0;
    Mask cur = Mask{1} << p;
    const int limit = item.max < 0 ? item.min + static_cast<int>(text_.size()) + 1 : item.max;
    for (int k = 1; k <= limit && cur != 0; ++k) {
      Mask next = 0;
      for (size_t q = 0; q <= text_.size(); ++q)
        if ((cur >> q) & 1) next |= base_ends(item, q);
      cur = next;
      if (k >= item.min) result |= cur;
    }
    return result;
  }

  const RefGrammar& g_;
  std::u32string text_;
  std::map<std::pair<int, size_t>, Mask> memo_;
};

// Whether each rule generates some string (a fixpoint, independent of the compiler's).
inline std::vector<bool> productive_rules(const RefGrammar& g) {
  std::vector<bool> prod(g.rules.size(), false);
  std::function<bool(const RefAlts&)> alts_ok;
  auto item_ok = [&](const RefItem& it) {
    if (it.min == 0) return true;
    switch (it.kind) {
      case RefItem::Lit:
        return true;
      case RefItem::Cls:
        return it.negated || !it.ranges.empty();
      case RefItem::Ref:
        return static_cast<bool>(prod[static_cast<size_t>(it.rule)]);
      case RefItem::Group:
        return alts_ok(it.group);
    }
    return false;
  };
  alts_ok = [&](const RefAlts& alts) {
    for (const RefSeq& s : alts) {
      bool ok = true;
      for (const RefItem& it : s) ok = ok && item_ok(it);
      if (ok) return true;
    }
    return false;
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < g.rules.size(); ++r) {
      if (!prod[r] && alts_ok(g.rules[r])) prod[r] = changed = true;
    }
  }
  return prod;
}

// Random grammars over `alphabet` without left recursion: rule i names rules after it anywhere, and
// itself or rules before it only after an item that cannot be empty; open repetitions (*, +,
// {m,}) only of items that cannot be empty.
class RefGenerator {
 public:
  RefGenerator(std::mt19937& rng, std::u32string alphabet) : rng_(rng), alphabet_(std::move(alphabet)) {}

  RefGrammar grammar() {
    RefGrammar g;
    n_ = 1 + pick(4);
    const char* const names[] = {"root", "r1", "item-2", "x_3", "Rule4"};
    for (int i = 0; i < n_; ++i) g.names.push_back(names[i]);
    for (int i = 0; i < n_; ++i) g.rules.push_back(alts(i, 0, false));
    return g;
  }

 private:
  int pick(int n) { return static_cast<int>(rng_() % static_cast<uint32_t>(n)); }
  char32_t letter() { return alphabet_[static_cast<size_t>(pick(static_cast<int>(alphabet_.size())))]; }

  RefAlts alts(int rule, int depth, bool prefix_nonempty) {
    RefAlts a;
    const int n = 1 + pick(3);
    for (int i = 0; i < n; ++i) a.push_back(seq(rule, depth, prefix_nonempty));
    return a;
  }
  RefSeq seq(int rule, int depth, bool prefix_nonempty) {
    RefSeq s;
    const int n = pick(4);
    for (int i = 0; i < n; ++i) {
      s.push_back(item(rule, depth, prefix_nonempty));
      prefix_nonempty |= nonempty(s.back());
    }
    return s;
  }
  static bool nonempty(const RefItem& it) {
    if (it.min == 0) return false;
    switch (it.kind) {
      case RefItem::Lit:
        return !it.lit.empty();
      case RefItem::Cls:
        return true;
      case RefItem::Ref:
        return false;  // unknown here
      case RefItem::Group:
        for (const RefSeq& s : it.group) {
          bool any = false;
          for (const RefItem& x : s) any |= nonempty(x);
          if (!any) return false;
        }
        return true;
    }
    return false;
  }
  RefItem item(int rule, int depth, bool prefix_nonempty) {
    RefItem it;
    const int k = pick(100);
    if (k < 35 || (k >= 85 && depth >= 2)) {
      it.kind = RefItem::Lit;
      const int len = pick(20) == 0 ? 0 : 1 + pick(3);
      for (int i = 0; i < len; ++i) it.lit += letter();
    } else if (k < 60) {
      it.kind = RefItem::Cls;
      if (pick(10) == 0) {
        it.dot = it.negated = true;
      } else {
        it.negated = pick(4) == 0;
        const int n = 1 + pick(2);
        for (int i = 0; i < n; ++i) {
          char32_t a = letter(), b = letter();
          if (b < a) std::swap(a, b);
          it.ranges.emplace_back(a, pick(2) ? a : b);
        }
      }
    } else if (k < 85) {
      const int lo = prefix_nonempty ? 0 : rule + 1;
      if (lo < n_) {
        it.kind = RefItem::Ref;
        it.rule = lo + pick(n_ - lo);
      } else {  // no rule may come here: a literal instead
        it.lit.push_back(letter());
      }
    } else {
      it.kind = RefItem::Group;
      it.group = alts(rule, depth + 1, prefix_nonempty);
    }
    if (pick(2) == 0) return it;
    const bool open_ok = nonempty(it);
    const int op = pick(open_ok ? 8 : 4);
    const int m = pick(3), extra = pick(3);
    switch (op) {
      case 0:
        it.op = "?", it.min = 0, it.max = 1;
        break;
      case 1:
        it.op = "{" + std::to_string(m) + "}", it.min = it.max = m;
        break;
      case 2:
        it.op = "{" + std::to_string(m) + "," + std::to_string(m + extra) + "}", it.min = m, it.max = m + extra;
        break;
      case 3:
        it.op = "{," + std::to_string(1 + extra) + "}", it.min = 0, it.max = 1 + extra;
        break;
      case 4:
      case 5:
        it.op = "*", it.min = 0, it.max = -1;
        break;
      case 6:
        it.op = "+", it.min = 1, it.max = -1;
        break;
      default:
        it.op = "{" + std::to_string(m) + ",}", it.min = m, it.max = -1;
        break;
    }
    return it;
  }

  std::mt19937& rng_;
  std::u32string alphabet_;
  int n_ = 1;
};

// GBNF text for `g`, with random spacing, line breaks, comments and escapes.
class RefRenderer {
 public:
  explicit RefRenderer(std::mt19937& rng) : rng_(rng) {}

  std::string render(const RefGrammar& g) {
    std::string out = pick(3) == 0 ? "# a generated grammar\n" : "";
    for (size_t r = 0; r < g.rules.size(); ++r) {
      out += g.names[r] + (pick(2) ? " ::= " : "::=\n  ") + alts(g, g.rules[r]) + "\n";
      if (pick(3) == 0) out += "\n";
    }
    return out;
  }

 private:
  int pick(int n) { return static_cast<int>(rng_() % static_cast<uint32_t>(n)); }
  std::string gap() {
    switch (pick(6)) {
      case 0:
        return "\n    ";
      case 1:
        return "  # note\n  ";
      default:
        return " ";
    }
  }
  std::string character(char32_t c, bool in_class) {
    if (c == '"' || c == '\\' || (in_class && (c == ']' || c == '-' || c == '^'))) {
      if (c == '-' || c == '^') return "\\x" + hex(c, 2);
      return std::string("\\") + static_cast<char>(c);
    }
    switch (pick(8)) {
      case 0:
        return c < 0x100 ? "\\x" + hex(c, 2) : utf8(c);
      case 1:
        return c < 0x10000 ? "\\u" + hex(c, 4) : utf8(c);
      case 2:
        return "\\U" + hex(c, 8);
      default:
        return utf8(c);
    }
  }
  static std::string hex(char32_t c, int digits) {
    std::string s;
    for (int i = digits - 1; i >= 0; --i) s += "0123456789abcdef"[(static_cast<uint32_t>(c) >> (4 * i)) & 15];
    return s;
  }
  std::string alts(const RefGrammar& g, const RefAlts& a) {
    std::string out;
    for (size_t i = 0; i < a.size(); ++i) {
      if (i > 0) out += pick(3) == 0 ? "\n  | " : " | ";
      out += seq(g, a[i]);
    }
    return out;
  }
  std::string seq(const RefGrammar& g, const RefSeq& s) {
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
      if (i > 0) out += gap();
      out += item(g, s[i]);
    }
    return out;
  }
  std::string item(const RefGrammar& g, const RefItem& it) {
    std::string out;
    switch (it.kind) {
      case RefItem::Lit:
        out = "\"";
        for (char32_t c : it.lit) out += character(c, false);
        out += "\"";
        break;
      case RefItem::Cls:
        if (it.dot) {
          out = pick(2) ? "." : "[^]";
          break;
        }
        out = it.negated ? "[^" : "[";
        for (const auto& [lo, hi] : it.ranges) {
          out += character(lo, true);
          if (hi != lo) out += "-" + character(hi, true);
        }
        out += "]";
        break;
      case RefItem::Ref:
        out = g.names[static_cast<size_t>(it.rule)];
        break;
      case RefItem::Group:
        out = "(" + alts(g, it.group) + ")";
        break;
    }
    return out + it.op;
  }

  std::mt19937& rng_;
};

// Random members of the language (false when a derivation got too deep).
class RefSampler {
 public:
  RefSampler(const RefGrammar& g, std::mt19937& rng, std::u32string alphabet)
      : g_(g), rng_(rng), alphabet_(std::move(alphabet)) {}

  bool sample(std::u32string& out) {
    out.clear();
    budget_ = 200;
    return alts(g_.rules[0], out, 0);
  }

 private:
  int pick(int n) { return static_cast<int>(rng_() % static_cast<uint32_t>(n)); }
  bool alts(const RefAlts& a, std::u32string& out, int depth) {
    if (depth > 12 || --budget_ < 0 || out.size() > 40) return false;
    return seq(a[static_cast<size_t>(pick(static_cast<int>(a.size())))], out, depth);
  }
  bool seq(const RefSeq& s, std::u32string& out, int depth) {
    for (const RefItem& it : s) {
      const int hi = it.max < 0 ? it.min + 2 : it.max;
      const int n = it.min + pick(hi - it.min + 1);
      for (int i = 0; i < n; ++i)
        if (!one(it, out, depth)) return false;
    }
    return true;
  }
  bool one(const RefItem& it, std::u32string& out, int depth) {
    switch (it.kind) {
      case RefItem::Lit:
        out += it.lit;
        return true;
      case RefItem::Cls: {
        std::u32string ok;
        for (char32_t c : alphabet_) {
          bool in = false;
          for (const auto& [lo, hi] : it.ranges) in |= c >= lo && c <= hi;
          if (in != it.negated) ok += c;
        }
        if (ok.empty()) return false;
        out += ok[static_cast<size_t>(pick(static_cast<int>(ok.size())))];
        return true;
      }
      case RefItem::Ref:
        return alts(g_.rules[static_cast<size_t>(it.rule)], out, depth + 1);
      case RefItem::Group:
        return alts(it.group, out, depth + 1);
    }
    return false;
  }

  const RefGrammar& g_;
  std::mt19937& rng_;
  std::u32string alphabet_;
  int budget_ = 0;
};

}  // namespace cellserve::engine::grammar::testing
