#include "engine/runtime/recurrent_state.h"

#include <string>

#include "base/check.h"

namespace cellserve::engine {

Result<RecurrentState> RecurrentState::create(const RecurrentShape& shape, int n_seq) {
  if (shape.n_layer < 0 || shape.conv_rows < 0 || shape.conv_channels < 0 || shape.n_head < 0 || shape.head_dim_k < 0 ||
      shape.head_dim_v < 0) {
    return Status::invalid_argument("recurrent state sizes must not be negative");
  }
  if (n_seq < 1) return Status::invalid_argument("recurrent state needs at least one sequence");
  RecurrentState s;
  s.shape_ = shape;
  s.seqs_.resize(static_cast<size_t>(n_seq));
  return s;
}

std::vector<float>& RecurrentState::storage(SeqId seq) {
  CS_CHECK(seq >= 0 && seq < n_seq()) << "sequence " << seq;
  std::vector<float>& data = seqs_[static_cast<size_t>(seq)];
  if (data.empty()) data.assign(static_cast<size_t>(shape_.floats_per_sequence()), 0.0f);
  return data;
}

float* RecurrentState::conv(int64_t layer, SeqId seq) {
  CS_CHECK(layer >= 0 && layer < shape_.n_layer) << "recurrent layer " << layer;
  const int64_t per_layer = shape_.conv_floats() + shape_.ssm_floats();
  return storage(seq).data() + layer * per_layer;
}

float* RecurrentState::ssm(int64_t layer, SeqId seq) { return conv(layer, seq) + shape_.conv_floats(); }

void RecurrentState::reset(SeqId seq) {
  if (seq < 0) {
    for (auto& data : seqs_) std::vector<float>().swap(data);
    return;
  }
  CS_CHECK(seq < n_seq()) << "sequence " << seq;
  std::vector<float>().swap(seqs_[static_cast<size_t>(seq)]);
}

void RecurrentState::copy(SeqId src, SeqId dst) {
  CS_CHECK(src >= 0 && src < n_seq() && dst >= 0 && dst < n_seq()) << "sequences " << src << ", " << dst;
  if (src == dst) return;
  seqs_[static_cast<size_t>(dst)] = seqs_[static_cast<size_t>(src)];
}

void RecurrentState::save(SeqId seq, int32_t pos, int slot) {
  CS_CHECK(seq >= 0 && seq < n_seq()) << "sequence " << seq;
  snapshots_[slot] = Snapshot{pos, seqs_[static_cast<size_t>(seq)]};
}

Result<int32_t> RecurrentState::restore(int slot, SeqId seq) {
  CS_CHECK(seq >= 0 && seq < n_seq()) << "sequence " << seq;
  const auto it = snapshots_.find(slot);
  if (it == snapshots_.end()) return Status::not_found("no saved state in slot " + std::to_string(slot));
  seqs_[static_cast<size_t>(seq)] = it->second.data;
  return it->second.pos;
}

size_t RecurrentState::memory_bytes() const {
  size_t n = 0;
  for (const auto& data : seqs_) n += data.size();
  for (const auto& [slot, snap] : snapshots_) n += snap.data.size();
  return n * sizeof(float);
}

}  // namespace cellserve::engine
