// GBNF syntax -> byte-level program (gbnf.h): rules, repetitions expanded into helper rules,
// character classes into UTF-8 byte tries, external rules into JSON values.
#include "engine/grammar/gbnf.h"

#include <algorithm>
#include <set>
#include <utility>

#include "engine/grammar/gbnf_parser.h"
#include "engine/grammar/gbnf_utf8.h"
#include "engine/grammar/schema.h"

namespace cellserve::engine::grammar {

namespace {

using Kind = GbnfElement::Kind;
using Run = std::vector<GbnfElement>;  // elements of a sequence being built (no End)
using Externals = std::map<std::string, std::shared_ptr<const OutputConstraint>>;

GbnfElement bytes(uint8_t lo, uint8_t hi) { return {Kind::Bytes, lo, hi, 0}; }
GbnfElement rule_ref(uint32_t rule) { return {Kind::Rule, 0, 0, rule}; }

void append_utf8(uint32_t cp, Run& out) {
  auto put = [&](uint32_t b) { out.push_back(bytes(static_cast<uint8_t>(b), static_cast<uint8_t>(b))); };
  if (cp < 0x80) {
    put(cp);
  } else if (cp < 0x800) {
    put(0xC0 | (cp >> 6));
    put(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    put(0xE0 | (cp >> 12));
    put(0x80 | ((cp >> 6) & 0x3F));
    put(0x80 | (cp & 0x3F));
  } else {
    put(0xF0 | (cp >> 18));
    put(0x80 | ((cp >> 12) & 0x3F));
    put(0x80 | ((cp >> 6) & 0x3F));
    put(0x80 | (cp & 0x3F));
  }
}

class Compiler {
 public:
  Compiler(const GbnfSyntax& syntax, const GrammarLimits& limits, const Externals& externals)
      : syntax_(syntax), limits_(limits), externals_(externals) {}

  Result<std::shared_ptr<const GbnfProgram>> compile() {
    for (const GbnfRuleDefinition& def : syntax_.rules) {
      user_ids_.emplace(def.name, static_cast<uint32_t>(rules_.size()));
      new_rule({def.name, def.at, Origin::User});
    }
    for (const GbnfRuleDefinition& def : syntax_.rules) {
      std::vector<Run> alts;
      CS_RETURN_IF_ERROR(compile_alternatives(def.body, def.name, alts));
      for (Run& alt : alts) CS_RETURN_IF_ERROR(add_alternative(user_ids_.at(def.name), std::move(alt)));
    }
    CS_RETURN_IF_ERROR(undefined_error());
    Run start;
    if (const auto it = user_ids_.find("root"); it != user_ids_.end()) {
      start.push_back(rule_ref(it->second));
    } else if (externals_.contains("root")) {
      CS_RETURN_IF_ERROR(reference("root", {}, start));
    } else {
      return Status::invalid_argument("the grammar has no rule 'root' (where the output starts)");
    }
    const uint32_t start_rule = new_rule({"root", {}, Origin::Start});
    CS_RETURN_IF_ERROR(add_alternative(start_rule, std::move(start)));
    program_->limits = limits_;
    flatten();
    program_->start = program_->starts[program_->rules[start_rule].first_alt];
    analyse_gbnf(*program_);
    if (const std::vector<uint32_t> cycle = find_left_recursion(*program_); !cycle.empty())
      return left_recursion_error(cycle);
    if (program_->rest_cost[program_->start] >= kInf) {
      const uint32_t root = user_ids_.at("root");
      return Status::invalid_argument(describe(info_[root].at) +
                                      ": rule 'root' generates no string (every alternative needs a rule that "
                                      "never finishes)");
    }
    if (1 + static_cast<size_t>(program_->depth_need[program_->start]) > limits_.max_grammar_depth) {
      return Status::invalid_argument(
          "every string of the grammar needs more than " + std::to_string(limits_.max_grammar_depth) +
          " nested rules; the limit (max_grammar_depth) is " + std::to_string(limits_.max_grammar_depth));
    }
    return std::shared_ptr<const GbnfProgram>(std::move(program_));
  }

 private:
  enum class Origin : uint8_t { User, Group, Repetition, Class, Start };
  struct RuleInfo {
    std::string owner;  // the user rule it belongs to
    TextPosition at;    // its definition, or the construct that made it
    Origin origin;
  };

  uint32_t new_rule(RuleInfo info) {
    rules_.emplace_back();
    info_.push_back(std::move(info));
    dispatch_.push_back(0);
    return static_cast<uint32_t>(rules_.size() - 1);
  }

  // Counts `n` more elements against max_grammar_elements.
  Status count(size_t n) {
    elements_ += n;
    if (elements_ <= limits_.max_grammar_elements) return Status::ok_status();
    return Status::invalid_argument(
        "the compiled grammar has more than " + std::to_string(limits_.max_grammar_elements) +
        " elements (terminals, rule references and alternative ends, after repetitions are expanded); the limit "
        "(max_grammar_elements) is " +
        std::to_string(limits_.max_grammar_elements));
  }

  // `alt`'s elements were counted when made; its End is counted here.
  Status add_alternative(uint32_t rule, Run alt) {
    CS_RETURN_IF_ERROR(count(1));
    rules_[rule].push_back(std::move(alt));
    return Status::ok_status();
  }

  // A helper rule with the given alternatives; `out` gets one reference to it.
  Status helper(RuleInfo info, std::vector<Run> alts, Run& out) {
    const uint32_t r = new_rule(std::move(info));
    for (Run& alt : alts) CS_RETURN_IF_ERROR(add_alternative(r, std::move(alt)));
    CS_RETURN_IF_ERROR(count(1));
    out.push_back(rule_ref(r));
    return Status::ok_status();
  }

  Status compile_alternatives(const GbnfAlternatives& alts, const std::string& owner, std::vector<Run>& out) {
    for (const GbnfSequence& seq : alts.sequences) {
      Run run;
      for (const GbnfItem& item : seq.items) CS_RETURN_IF_ERROR(compile_item(item, owner, run));
      out.push_back(std::move(run));
    }
    return Status::ok_status();
  }

  Status compile_item(const GbnfItem& item, const std::string& owner, Run& out) {
    Run run;
    switch (item.kind) {
      case GbnfItem::Kind::Literal:
        for (uint32_t cp : item.code_points) append_utf8(cp, run);
        CS_RETURN_IF_ERROR(count(run.size()));
        break;
      case GbnfItem::Kind::Class:
        CS_RETURN_IF_ERROR(character_class(item, owner, run));
        break;
      case GbnfItem::Kind::RuleRef:
        CS_RETURN_IF_ERROR(reference(item.name, item.at, run));
        break;
      case GbnfItem::Kind::Group: {
        std::vector<Run> alts;
        CS_RETURN_IF_ERROR(compile_alternatives(item.group.front(), owner, alts));
        if (alts.size() == 1) {
          run = std::move(alts.front());  // a single sequence needs no rule of its own
        } else {
          CS_RETURN_IF_ERROR(helper({owner, item.at, Origin::Group}, std::move(alts), run));
        }
        break;
      }
    }
    for (const GbnfRepeat& rep : item.repeats) CS_RETURN_IF_ERROR(repeat(rep, owner, run));
    out.insert(out.end(), run.begin(), run.end());
    return Status::ok_status();
  }

  // run := run{rep.min, rep.max}, with run first made one element (a rule when it is longer).
  Status repeat(const GbnfRepeat& rep, const std::string& owner, Run& run) {
    if (run.size() != 1) {
      Run one;
      std::vector<Run> alts;
      alts.push_back(std::move(run));
      CS_RETURN_IF_ERROR(helper({owner, rep.at, Origin::Repetition}, std::move(alts), one));
      run = std::move(one);
    }
    const GbnfElement x = run.front();
    Run out;
    CS_RETURN_IF_ERROR(count(rep.min));
    out.assign(rep.min, x);
    if (rep.max == kGbnfUnbounded) {  // R ::= x R | ""
      const uint32_t r = new_rule({owner, rep.at, Origin::Repetition});
      CS_RETURN_IF_ERROR(count(2));
      CS_RETURN_IF_ERROR(add_alternative(r, {x, rule_ref(r)}));
      CS_RETURN_IF_ERROR(add_alternative(r, {}));
      CS_RETURN_IF_ERROR(count(1));
      out.push_back(rule_ref(r));
    } else if (rep.max > rep.min) {  // O1 ::= x | "", Ok ::= x O(k-1) | ""
      uint32_t inner = 0;
      for (uint32_t k = 1; k <= rep.max - rep.min; ++k) {
        const uint32_t r = new_rule({owner, rep.at, Origin::Repetition});
        Run alt{x};
        if (k > 1) alt.push_back(rule_ref(inner));
        CS_RETURN_IF_ERROR(count(alt.size()));
        CS_RETURN_IF_ERROR(add_alternative(r, std::move(alt)));
        CS_RETURN_IF_ERROR(add_alternative(r, {}));
        inner = r;
      }
      CS_RETURN_IF_ERROR(count(1));
      out.push_back(rule_ref(inner));
    }
    run = std::move(out);
    return Status::ok_status();
  }

  Status character_class(const GbnfItem& item, const std::string& owner, Run& out) {
    const std::vector<CodePointRange> set = normalize_class(item.ranges, item.negated);
    CS_RETURN_IF_ERROR(count(1));
    if (set.size() == 1 && set[0].last < 0x80) {  // one ASCII range: one element
      out.push_back(bytes(static_cast<uint8_t>(set[0].first), static_cast<uint8_t>(set[0].last)));
      return Status::ok_status();
    }
    if (const auto it = classes_.find(set); it != classes_.end()) {
      out.push_back(rule_ref(it->second));
      return Status::ok_status();
    }
    // One rule per trie node; its alternatives are the node's edges (sorted, disjoint: dispatch).
    const Utf8Trie trie = utf8_trie(set);
    const auto base = static_cast<uint32_t>(rules_.size());
    for (size_t i = 0; i < trie.nodes.size(); ++i) {
      new_rule({owner, item.at, Origin::Class});
      dispatch_.back() = 1;
    }
    for (size_t i = 0; i < trie.nodes.size(); ++i) {
      for (const Utf8Edge& edge : trie.nodes[i]) {
        Run alt{bytes(edge.lo, edge.hi)};
        if (edge.next >= 0) alt.push_back(rule_ref(base + static_cast<uint32_t>(edge.next)));
        CS_RETURN_IF_ERROR(count(alt.size()));
        CS_RETURN_IF_ERROR(add_alternative(base + static_cast<uint32_t>(i), std::move(alt)));
      }
    }
    classes_.emplace(set, base);
    out.push_back(rule_ref(base));
    return Status::ok_status();
  }

  // A rule name: a rule of the text, else an external JSON value, else undefined (reported later).
  Status reference(const std::string& name, TextPosition at, Run& out) {
    CS_RETURN_IF_ERROR(count(1));
    if (const auto it = user_ids_.find(name); it != user_ids_.end()) {
      out.push_back(rule_ref(it->second));
      return Status::ok_status();
    }
    if (const auto ext = externals_.find(name); ext != externals_.end() && ext->second != nullptr) {
      if (ext->second->root().grammar != nullptr) {
        return Status::invalid_argument(describe(at) + ": the external rule '" + name +
                                        "' is a GBNF grammar; external rules must be JSON Schema constraints");
      }
      auto [it, added] = external_ids_.emplace(name, static_cast<uint32_t>(program_->externals.size()));
      if (added) {
        program_->externals.push_back(ext->second);
        program_->external_roots.push_back(&ext->second->root());
      }
      out.push_back({Kind::External, 0, 0, it->second});
      return Status::ok_status();
    }
    if (undefined_names_.insert(name).second) undefined_.emplace_back(name, at);
    out.push_back(bytes(0, 0));  // a placeholder: compilation fails below
    return Status::ok_status();
  }

  Status undefined_error() const {
    if (undefined_.empty()) return Status::ok_status();
    constexpr size_t kNamed = 8;
    std::string message;
    for (size_t i = 0; i < undefined_.size() && i < kNamed; ++i) {
      if (i > 0) message += "; ";
      message += describe(undefined_[i].second) + ": undefined rule '" + undefined_[i].first + "'";
    }
    if (undefined_.size() > kNamed) message += "; and " + std::to_string(undefined_.size() - kNamed) + " more";
    return Status::invalid_argument(message);
  }

  Status left_recursion_error(std::vector<uint32_t> cycle) const {
    cycle.pop_back();  // the first rule, repeated
    // Start at the earliest rule: user rules come first, so the message names one if it can.
    std::rotate(cycle.begin(), std::min_element(cycle.begin(), cycle.end()), cycle.end());
    const RuleInfo& first = info_[cycle.front()];
    bool one_owner = true, repetition = false;
    for (uint32_t r : cycle) {
      one_owner &= info_[r].owner == first.owner;
      repetition |= info_[r].origin == Origin::Repetition;
    }
    if (one_owner && repetition && first.origin != Origin::User) {
      return Status::invalid_argument(describe(first.at) + ": rule '" + first.owner +
                                      "' is left-recursive: this repetition repeats an item that can match the "
                                      "empty string");
    }
    std::string path = first.owner;
    std::string last = first.owner;
    for (size_t i = 1; i <= cycle.size(); ++i) {
      const std::string& owner = info_[cycle[i % cycle.size()]].owner;
      if (owner == last && i < cycle.size()) continue;
      path += " -> " + owner;
      last = owner;
    }
    return Status::invalid_argument(describe(first.at) + ": rule '" + first.owner +
                                    "' is left-recursive: it can reach itself before reading any character (" + path +
                                    ")");
  }

  void flatten() {
    GbnfProgram& p = *program_;
    p.elements.reserve(elements_);
    for (size_t r = 0; r < rules_.size(); ++r) {
      GbnfRule rule;
      rule.first_alt = static_cast<uint32_t>(p.starts.size());
      rule.alt_count = static_cast<uint32_t>(rules_[r].size());
      rule.dispatch = dispatch_[r] != 0;
      for (const Run& alt : rules_[r]) {
        p.starts.push_back(static_cast<uint32_t>(p.elements.size()));
        p.elements.insert(p.elements.end(), alt.begin(), alt.end());
        p.elements.push_back({});  // End
      }
      p.rules.push_back(rule);
    }
  }

  const GbnfSyntax& syntax_;
  const GrammarLimits& limits_;
  const Externals& externals_;
  std::unique_ptr<GbnfProgram> program_ = std::make_unique<GbnfProgram>();
  std::vector<std::vector<Run>> rules_;  // alternatives per rule, before flattening
  std::vector<RuleInfo> info_;
  std::vector<uint8_t> dispatch_;
  std::map<std::string, uint32_t> user_ids_, external_ids_;
  std::map<std::vector<CodePointRange>, uint32_t> classes_;  // the class's first rule
  std::set<std::string> undefined_names_;
  std::vector<std::pair<std::string, TextPosition>> undefined_;  // first use of each
  size_t elements_ = 0;
};

}  // namespace

Result<std::shared_ptr<const GbnfProgram>> compile_gbnf(std::string_view text, const GrammarLimits& limits,
                                                        const Externals& externals) {
  CS_ASSIGN_OR_RETURN(const GbnfSyntax syntax, parse_gbnf(text, limits));
  return Compiler(syntax, limits, externals).compile();
}

}  // namespace cellserve::engine::grammar
