// The key/value cache: a pool of cells shared by all sequences.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "engine/quant/ggml_type.h"
#include "engine/runtime/batch.h"

namespace cellserve::engine {

// Geometry of the cache, from the model.
struct KvCacheShape {
  int64_t n_layer = 0;  // layers that have attention (cells are allocated for each)
  int64_t n_kv_head = 0;
  int64_t head_dim_k = 0;
  int64_t head_dim_v = 0;
};

// Cells hold one token's keys and values for every attention layer. A cell belongs to a set of
// sequences (a shared prefix can be copied to another sequence without copying data) and has
// one position. Storage per layer: K [n_kv_head][n_cells][head_dim_k] and V [n_kv_head][n_cells]
// [head_dim_v], each head row encoded in `type` (F32, F16 or Q8_0). Head-major, so that the cells
// of one head, which attention reads in order, lie contiguous (a long prompt's head is MBs: with
// the heads interleaved, every cell would start a new stride for the prefetchers).
// Not thread-safe; the forward pass writes disjoint cells from several threads.
class KvCache {
 public:
  static constexpr int kMaxSequences = 64;

  // Fails with InvalidArgument for an unsupported type or a head size Q8_0 cannot hold.
  static Result<KvCache> create(const KvCacheShape& shape, int64_t n_cells, GgmlType type);

  int64_t n_cells() const { return static_cast<int64_t>(cells_.size()); }
  GgmlType type() const { return type_; }
  const KvCacheShape& shape() const { return shape_; }
  int64_t used_cells() const;
  // Bytes of K and V storage.
  size_t memory_bytes() const { return keys_.size() + values_.size(); }

  // Finds a free cell for every token of `batch`, marks them as holding those tokens, and
  // stores the chosen cell indices in `cells`. ResourceExhausted when the cache is full.
  Status allocate(const Batch& batch, std::vector<int32_t>* cells);

  // Removes sequence `seq`'s cells with position in [p0, p1) (p1 < 0: to the end). seq < 0: all.
  void seq_rm(SeqId seq, int32_t p0, int32_t p1);
  // Makes `dst` share `src`'s cells with position in [p0, p1) (no data is copied).
  void seq_cp(SeqId src, SeqId dst, int32_t p0, int32_t p1);
  // Largest position held for `seq`, or -1.
  int32_t seq_pos_max(SeqId seq) const;
  // Number of `seq`'s cells with position in [p0, p1) (p1 < 0: to the end).
  int64_t seq_n_cells(SeqId seq, int32_t p0, int32_t p1) const;
  void clear();

  // True when cell `c` can be attended to by a token of `seq` at position `pos`.
  bool visible(int64_t c, SeqId seq, int32_t pos) const {
    const Cell& cell = cells_[static_cast<size_t>(c)];
    return cell.pos >= 0 && cell.pos <= pos && (cell.seqs >> seq & 1u);
  }
  // Position of the token cell `c` holds (-1: free).
  int32_t cell_pos(int64_t c) const { return cells_[static_cast<size_t>(c)].pos; }
  // One past the highest cell index in use (attention scans [0, scan_end())).
  int64_t scan_end() const;

  // Byte rows of one head: REQUIRES layer < n_layer, cell < n_cells, head < n_kv_head.
  std::byte* key(int64_t layer, int64_t cell, int64_t head);
  std::byte* value(int64_t layer, int64_t cell, int64_t head);
  const std::byte* key(int64_t layer, int64_t cell, int64_t head) const;
  const std::byte* value(int64_t layer, int64_t cell, int64_t head) const;
  size_t key_row_bytes() const { return k_head_bytes_; }
  size_t value_row_bytes() const { return v_head_bytes_; }

 private:
  struct Cell {
    int32_t pos = -1;
    uint64_t seqs = 0;  // bit s set: belongs to sequence s
  };

  KvCacheShape shape_;
  GgmlType type_ = GgmlType::F16;
  std::vector<Cell> cells_;
  size_t k_head_bytes_ = 0;
  size_t v_head_bytes_ = 0;
  std::vector<std::byte> keys_;
  std::vector<std::byte> values_;
};

}  // namespace cellserve::engine
