#include "server/scheduler/prefix_cache.h"

#include <algorithm>

#include "server/scheduler/job.h"

namespace cellserve::server {

std::vector<engine::SeqId> PrefixCache::insert(engine::SeqId seq, std::vector<int32_t> tokens,
                                               std::vector<StateSnapshot> snaps,
                                               std::shared_ptr<const engine::LoraSet> lora, uint64_t partition) {
  entries_.push_back(Entry{seq, std::move(tokens), std::move(snaps), ++clock_, std::move(lora), partition});
  std::vector<engine::SeqId> freed;
  while (memory_bytes() > budget_ && !entries_.empty()) freed.push_back(evict_one());
  return freed;
}

PrefixCache::Match PrefixCache::find(std::span<const int32_t> prompt, int32_t max_tokens, const engine::LoraSet* lora,
                                     uint64_t partition) {
  Match best;
  for (const Entry& e : entries_) {
    if (e.partition != partition || !same_lora(e.lora.get(), lora)) continue;
    const size_t limit = std::min({e.tokens.size(), prompt.size(), static_cast<size_t>(std::max(0, max_tokens))});
    size_t common = 0;
    while (common < limit && e.tokens[common] == prompt[common]) ++common;
    if (!ctx_.is_recurrent()) {
      if (static_cast<int32_t>(common) > best.n_tokens) best = Match{e.seq, static_cast<int32_t>(common), -1};
      continue;
    }
    // The snapshot taken at position p covers tokens [0, p].
    for (const StateSnapshot& s : e.snaps) {
      const int32_t n = s.pos + 1;
      if (n <= static_cast<int32_t>(common) && n > best.n_tokens) best = Match{e.seq, n, s.slot};
    }
  }
  return best;
}

void PrefixCache::touch(engine::SeqId seq) {
  for (Entry& e : entries_) {
    if (e.seq == seq) e.last_used = ++clock_;
  }
}

engine::SeqId PrefixCache::evict_one() {
  if (entries_.empty()) return -1;
  size_t oldest = 0;
  for (size_t i = 1; i < entries_.size(); ++i) {
    if (entries_[i].last_used < entries_[oldest].last_used) oldest = i;
  }
  const engine::SeqId seq = entries_[oldest].seq;
  drop(oldest);
  return seq;
}

void PrefixCache::drop(size_t index) {
  Entry& e = entries_[index];
  (void)ctx_.seq_rm(e.seq);  // every position: allowed for recurrent models too
  for (const StateSnapshot& s : e.snaps) ctx_.drop_state(s.slot);
  entries_.erase(entries_.begin() + static_cast<std::ptrdiff_t>(index));
}

size_t PrefixCache::memory_bytes() const {
  size_t total = 0;
  for (const Entry& e : entries_) total += entry_bytes(e);
  return total;
}

}  // namespace cellserve::server
