// The prefix cache: finished sequences whose KV cells (and, for recurrent models, state
// snapshots) are kept so a later prompt that starts with the same tokens reuses them instead of
// recomputing. Entries are whole sequences of the engine Context; a hit shares their cells with
// the new sequence (no K/V data is copied). Least recently used entries are evicted when the
// cache exceeds its memory budget or the KV pool runs out of cells.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/lora/lora_adapter.h"
#include "engine/runtime/context.h"

namespace cellserve::server {

// A state snapshot of a recurrent model: the state after absorbing the token at `pos`.
struct StateSnapshot {
  int32_t pos = -1;
  int slot = -1;  // Context snapshot slot
};

class PrefixCache {
 public:
  // `bytes_per_token`: KV bytes of one token; `bytes_per_snapshot`: recurrent state bytes.
  PrefixCache(engine::Context& ctx, size_t budget_bytes, size_t bytes_per_token, size_t bytes_per_snapshot)
      : ctx_(ctx), budget_(budget_bytes), bytes_per_token_(bytes_per_token), bytes_per_snapshot_(bytes_per_snapshot) {}

  // Takes over sequence `seq`, which holds `tokens` at positions [0, tokens.size()), and the
  // snapshots taken along it. Returns the sequence ids freed by evictions this caused (an entry
  // over budget on its own is dropped at once). `lora`: the adapters its tokens were computed
  // with (null: none); only prompts under an equal set reuse it.
  // `partition`: the job's cache_partition; only prompts of the same partition reuse it.
  std::vector<engine::SeqId> insert(engine::SeqId seq, std::vector<int32_t> tokens, std::vector<StateSnapshot> snaps,
                                    std::shared_ptr<const engine::LoraSet> lora = nullptr, uint64_t partition = 0);

  struct Match {
    engine::SeqId seq = -1;  // the entry's sequence; -1: no hit
    int32_t n_tokens = 0;    // positions [0, n_tokens) can be reused
    int snapshot = -1;       // recurrent models: the snapshot to restore (at n_tokens - 1)
  };
  // The longest reusable prefix of `prompt`, at most `max_tokens` long. For a recurrent model
  // only a prefix that ends at a snapshot can be reused. Only entries computed with an adapter
  // set equal to `lora` (same_lora) match.
  Match find(std::span<const int32_t> prompt, int32_t max_tokens, const engine::LoraSet* lora = nullptr,
             uint64_t partition = 0);
  // Marks the entry holding `seq` as just used.
  void touch(engine::SeqId seq);

  // Evicts the least recently used entry and returns its (now empty) sequence; -1 when empty.
  engine::SeqId evict_one();
  bool empty() const { return entries_.empty(); }
  size_t memory_bytes() const;
  size_t n_entries() const { return entries_.size(); }

 private:
  struct Entry {
    engine::SeqId seq = -1;
    std::vector<int32_t> tokens;
    std::vector<StateSnapshot> snaps;
    uint64_t last_used = 0;
    std::shared_ptr<const engine::LoraSet> lora;
    uint64_t partition = 0;
  };
  size_t entry_bytes(const Entry& e) const {
    return e.tokens.size() * bytes_per_token_ + e.snaps.size() * bytes_per_snapshot_;
  }
  void drop(size_t index);

  engine::Context& ctx_;
  size_t budget_;
  size_t bytes_per_token_;
  size_t bytes_per_snapshot_;
  uint64_t clock_ = 0;
  std::vector<Entry> entries_;
};

}  // namespace cellserve::server
