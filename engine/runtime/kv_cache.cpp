#include "engine/runtime/kv_cache.h"

namespace cellserve::engine {

Result<KvCache> KvCache::create(const KvCacheShape& shape, int64_t n_cells, GgmlType type) {
  if (type != GgmlType::F32 && type != GgmlType::F16 && type != GgmlType::Q8_0) {
    return Status::invalid_argument("KV cache type " + std::string(ggml_type_name(type)) +
                                    " is not supported (f32, f16, q8_0)");
  }
  if (n_cells <= 0) return Status::invalid_argument("KV cache needs at least one cell");
  const int64_t block = ggml_block_size(type);
  if (shape.head_dim_k % block != 0 || shape.head_dim_v % block != 0) {
    return Status::invalid_argument("KV cache type " + std::string(ggml_type_name(type)) +
                                    " needs head sizes divisible by " + std::to_string(block));
  }
  KvCache kv;
  kv.shape_ = shape;
  kv.type_ = type;
  kv.cells_.resize(static_cast<size_t>(n_cells));
  kv.k_head_bytes_ = ggml_row_size(type, shape.head_dim_k);
  kv.v_head_bytes_ = ggml_row_size(type, shape.head_dim_v);
  const auto per_layer = static_cast<size_t>(n_cells * shape.n_kv_head);
  kv.keys_.resize(static_cast<size_t>(shape.n_layer) * per_layer * kv.k_head_bytes_);
  kv.values_.resize(static_cast<size_t>(shape.n_layer) * per_layer * kv.v_head_bytes_);
  return kv;
}

int64_t KvCache::used_cells() const {
  int64_t n = 0;
  for (const Cell& c : cells_) n += c.pos >= 0 ? 1 : 0;
  return n;
}

int64_t KvCache::scan_end() const {
  for (int64_t c = n_cells(); c > 0; --c) {
    if (cells_[static_cast<size_t>(c - 1)].pos >= 0) return c;
  }
  return 0;
}

Status KvCache::allocate(const Batch& batch, std::vector<int32_t>* cells) {
  cells->clear();
  size_t next = 0;
  for (int64_t i = 0; i < batch.size(); ++i) {
    while (next < cells_.size() && cells_[next].pos >= 0) ++next;
    if (next == cells_.size()) {
      // Undo this batch's claims so a failed allocation leaves the cache unchanged.
      for (int32_t c : *cells) cells_[static_cast<size_t>(c)] = Cell{};
      cells->clear();
      return Status::resource_exhausted("the KV cache is full (" + std::to_string(cells_.size()) +
                                        " cells); raise --ctx-size or shorten the prompt");
    }
    cells_[next].pos = batch.pos[static_cast<size_t>(i)];
    cells_[next].seqs = uint64_t{1} << batch.seq[static_cast<size_t>(i)];
    cells->push_back(static_cast<int32_t>(next));
  }
  return {};
}

void KvCache::seq_rm(SeqId seq, int32_t p0, int32_t p1) {
  for (Cell& c : cells_) {
    if (c.pos < 0 || c.pos < p0 || (p1 >= 0 && c.pos >= p1)) continue;
    if (seq < 0)
      c.seqs = 0;
    else
      c.seqs &= ~(uint64_t{1} << seq);
    if (c.seqs == 0) c.pos = -1;
  }
}

void KvCache::seq_cp(SeqId src, SeqId dst, int32_t p0, int32_t p1) {
  for (Cell& c : cells_) {
    if (c.pos < 0 || c.pos < p0 || (p1 >= 0 && c.pos >= p1)) continue;
    if (c.seqs >> src & 1u) c.seqs |= uint64_t{1} << dst;
  }
}

int32_t KvCache::seq_pos_max(SeqId seq) const {
  int32_t max = -1;
  for (const Cell& c : cells_) {
    if (c.pos > max && (c.seqs >> seq & 1u)) max = c.pos;
  }
  return max;
}

int64_t KvCache::seq_n_cells(SeqId seq, int32_t p0, int32_t p1) const {
  int64_t n = 0;
  for (const Cell& c : cells_) {
    if (c.pos < 0 || c.pos < p0 || (p1 >= 0 && c.pos >= p1)) continue;
    n += (c.seqs >> seq & 1u) ? 1 : 0;
  }
  return n;
}

void KvCache::clear() {
  for (Cell& c : cells_) c = Cell{};
}

std::byte* KvCache::key(int64_t layer, int64_t cell, int64_t head) {
  const auto row = static_cast<size_t>((layer * shape_.n_kv_head + head) * n_cells() + cell);
  return keys_.data() + row * k_head_bytes_;
}
std::byte* KvCache::value(int64_t layer, int64_t cell, int64_t head) {
  const auto row = static_cast<size_t>((layer * shape_.n_kv_head + head) * n_cells() + cell);
  return values_.data() + row * v_head_bytes_;
}
const std::byte* KvCache::key(int64_t layer, int64_t cell, int64_t head) const {
  return const_cast<KvCache*>(this)->key(layer, cell, head);
}
const std::byte* KvCache::value(int64_t layer, int64_t cell, int64_t head) const {
  return const_cast<KvCache*>(this)->value(layer, cell, head);
}

}  // namespace cellserve::engine
