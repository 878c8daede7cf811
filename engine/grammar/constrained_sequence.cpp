// TokenIndex and ConstrainedSequence: masking a vocabulary with the byte matcher.
#include <algorithm>
#include <limits>
#include <numeric>

#include "engine/grammar/matcher.h"
#include "engine/grammar/output_constraint.h"
#include "engine/grammar/token_index.h"

namespace cellserve::engine::grammar {

TokenIndex::TokenIndex(const tokenizer::Tokenizer& tok, bool special_text) {
  namespace attr = tokenizer::token_attr;
  const int32_t n = tok.n_vocab();
  kinds_.assign(static_cast<size_t>(n), Kind::Excluded);
  position_.assign(static_cast<size_t>(n), -1);
  std::vector<int32_t> text;
  for (int32_t id = 0; id < n; ++id) {
    if (tok.is_eog(id)) {
      kinds_[static_cast<size_t>(id)] = Kind::EndOfGeneration;
      eog_ids_.push_back(id);
      continue;
    }
    const uint32_t a = tok.vocab().attr(id);
    if (a & (attr::kUnknown | attr::kUnused)) continue;
    if (!special_text && (a & (attr::kControl | attr::kUserDefined))) continue;
    if (tok.token_to_piece(id, /*special=*/true).empty()) continue;
    kinds_[static_cast<size_t>(id)] = Kind::Text;
    text.push_back(id);
  }
  std::sort(text.begin(), text.end(), [&](int32_t x, int32_t y) {
    const std::string& px = tok.token_to_piece(x, true);
    const std::string& py = tok.token_to_piece(y, true);
    return px != py ? px < py : x < y;
  });
  sorted_ids_ = text;
  offsets_.reserve(text.size() + 1);
  lcp_.reserve(text.size());
  offsets_.push_back(0);
  std::string_view prev;
  for (size_t i = 0; i < text.size(); ++i) {
    const std::string& p = tok.token_to_piece(text[i], true);
    uint32_t l = 0;
    while (l < prev.size() && l < p.size() && prev[l] == p[l]) ++l;
    lcp_.push_back(l);
    prev = p;  // the tokenizer keeps its pieces
    bytes_ += p;
    offsets_.push_back(static_cast<uint32_t>(bytes_.size()));
    position_[static_cast<size_t>(text[i])] = static_cast<int32_t>(i);
    max_len_ = std::max(max_len_, p.size());
  }
}

std::shared_ptr<const TokenIndex> build_token_index(const tokenizer::Tokenizer& tok, bool special_text) {
  return std::make_shared<const TokenIndex>(tok, special_text);
}

struct ConstrainedSequence::State {
  std::shared_ptr<const OutputConstraint> constraint;
  std::shared_ptr<const TokenIndex> index;
  ThreadSet current;
  bool ended = false;  // an end-of-generation token was accepted
  // The last mask found no allowed token and left the end-of-generation tokens allowed instead.
  mutable bool eog_fallback = false;
  // Scratch for mask_logits: levels[d] is the state after the first d bytes of the current piece.
  mutable std::vector<ThreadSet> levels;
  mutable std::vector<uint8_t> keep;
  mutable std::vector<int32_t> progress;  // see mask_logits
  mutable int64_t last_work = 0;          // the last mask's WorkMeter::work
  mutable Status failure;                 // a mask ran out of its budget (why): nothing may follow
  ThreadSet scratch;
};

ConstrainedSequence::ConstrainedSequence(std::shared_ptr<const OutputConstraint> constraint,
                                         std::shared_ptr<const TokenIndex> index)
    : state_(std::make_unique<State>()) {
  state_->constraint = std::move(constraint);
  state_->index = std::move(index);
  initial_state(state_->constraint->root(), state_->current);
}

ConstrainedSequence::~ConstrainedSequence() = default;
ConstrainedSequence::ConstrainedSequence(ConstrainedSequence&&) noexcept = default;
ConstrainedSequence& ConstrainedSequence::operator=(ConstrainedSequence&&) noexcept = default;

bool ConstrainedSequence::complete() const { return completion_cost(state_->current) == 0; }

int64_t ConstrainedSequence::last_mask_work() const { return state_->last_work; }

namespace {

Status over_budget(const WorkMeter& meter, const GrammarLimits& limits) {
  if (meter.over_threads) {
    return Status::invalid_argument(
        "constrained output: the output reached more simultaneous candidate parses than the limit "
        "(max_live_threads) of " +
        std::to_string(limits.max_live_threads));
  }
  return Status::invalid_argument(
      "constrained output: masking the next token needs more matcher work than the limit (max_mask_work) of " +
      std::to_string(limits.max_mask_work) + " units");
}

}  // namespace

Status ConstrainedSequence::mask_logits(std::span<float> logits, int64_t remaining_tokens) const {
  const State& st = *state_;
  const TokenIndex& index = *st.index;
  const GrammarLimits& limits = st.constraint->limits();
  const float kMasked = -std::numeric_limits<float>::infinity();
  const size_t n = std::min(logits.size(), static_cast<size_t>(index.n_vocab()));
  for (size_t i = index.n_vocab(); i < logits.size(); ++i) logits[i] = kMasked;
  auto& keep = st.keep;
  keep.assign(n, 0);
  st.eog_fallback = false;
  st.progress.clear();
  WorkMeter meter;
  meter.max_work = limits.max_mask_work;
  meter.max_threads = limits.max_live_threads;
  auto fail = [&] {
    st.last_work = meter.work;
    if (st.failure.ok()) st.failure = over_budget(meter, limits);
    std::fill(logits.begin(), logits.begin() + static_cast<std::ptrdiff_t>(n), kMasked);
    return st.failure;
  };
  if (!st.failure.ok()) return fail();

  const int64_t cost_now = completion_cost(st.current, &meter);
  bool any = false;
  if (!st.ended) {
    // Budget: a token is allowed only if, after it, the remaining tokens (remaining - 1) still
    // cover the shortest completion plus the end token. One byte raises the completion cost by at
    // most growth_bound, so far from the limit the per-token check is skipped.
    const int64_t growth = st.constraint->root().growth_bound;
    const int64_t worst = add_cost(cost_now, mul_cost(growth, static_cast<int64_t>(index.max_piece_length())));
    const bool check_budget = add_cost(worst, 2) > remaining_tokens;
    // The tokens that shorten the completion most, of those over the budget. The cost counts
    // bytes, one token each at worst, so a budget below it may still fit: "RISK_LEVEL: 5" is 13
    // bytes and 6 Qwen tokens. When no token fits, these go on rather than ending with nothing.
    int64_t best_cost = cost_now;
    auto& progress = st.progress;

    auto& levels = st.levels;
    if (levels.size() < index.max_piece_length() + 1) levels.resize(index.max_piece_length() + 1);
    levels[0].assign(st.current);
    size_t m = 0;            // levels[0..m] hold the states along the previous piece
    bool dead_at_m = false;  // ... and levels[m] is empty (that prefix cannot continue)
    for (size_t i = 0; i < index.size(); ++i) {
      const size_t l = index.lcp(i);
      if (dead_at_m && l >= m) continue;  // shares the dead prefix
      const std::string_view piece = index.piece(i);
      size_t d = std::min(l, m);
      dead_at_m = false;
      for (; d < piece.size(); ++d) {
        step(levels[d], static_cast<uint8_t>(piece[d]), levels[d + 1], &meter);
        if (meter.exhausted()) return fail();
        if (levels[d + 1].empty()) {
          dead_at_m = true;
          ++d;
          break;
        }
      }
      m = d;
      if (dead_at_m) continue;
      const int32_t id = index.id(i);
      if (static_cast<size_t>(id) >= n) continue;
      if (check_budget) {
        const int64_t cost_after = completion_cost(levels[piece.size()], &meter);
        if (meter.exhausted()) return fail();
        if (add_cost(cost_after, 2) > remaining_tokens) {
          if (cost_after < best_cost) {
            best_cost = cost_after;
            progress.clear();
          }
          if (cost_after == best_cost && cost_after < cost_now) progress.push_back(id);
          continue;
        }
      }
      keep[static_cast<size_t>(id)] = 1;
      any = true;
    }
  }
  if (!any && !st.progress.empty()) {
    for (int32_t id : st.progress) keep[static_cast<size_t>(id)] = 1;
    any = true;
  }
  if (cost_now == 0 || !any) {
    // Complete: the end tokens (beside the tokens that extend a top-level number). A dead end (no
    // token fits the budget or the vocabulary): the end tokens rather than nothing.
    st.eog_fallback = !st.ended && cost_now > 0;
    for (int32_t id : index.eog_ids())
      if (static_cast<size_t>(id) < n) keep[static_cast<size_t>(id)] = 1;
  }
  for (size_t i = 0; i < n; ++i)
    if (!keep[i]) logits[i] = kMasked;
  st.last_work = meter.work;
  return Status::ok_status();
}

Status ConstrainedSequence::accept(int32_t token) {
  State& st = *state_;
  const TokenIndex& index = *st.index;
  if (token < 0 || token >= index.n_vocab()) return Status::invalid_argument("token id out of range");
  if (st.ended) return Status::invalid_argument("the constrained document has already ended");
  if (!st.failure.ok()) return st.failure;
  const bool done = complete();
  switch (index.kind(token)) {
    case TokenIndex::Kind::EndOfGeneration:
      if (!done && !st.eog_fallback)
        return Status::invalid_argument("end of generation before the constrained document is complete");
      st.ended = true;
      return Status::ok_status();
    case TokenIndex::Kind::Excluded:
      return Status::invalid_argument("token " + std::to_string(token) + " may not appear in a constrained document");
    case TokenIndex::Kind::Text:
      break;
  }
  if (!step_bytes(st.current, index.piece_of(token), st.scratch))
    return Status::invalid_argument("token " + std::to_string(token) + " cannot continue the constrained document");
  st.eog_fallback = false;
  return Status::ok_status();
}

}  // namespace cellserve::engine::grammar
