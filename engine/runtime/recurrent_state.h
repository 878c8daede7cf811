// Per-sequence recurrent state of hybrid models (Qwen3.5's Gated DeltaNet layers), kept beside
// the KV cache: for every recurrent layer, the convolution window and one state matrix per head.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "base/status.h"
#include "engine/runtime/batch.h"

namespace cellserve::engine {

// Geometry of the state, from the model. n_layer == 0: the model has no recurrent layers.
struct RecurrentShape {
  int64_t n_layer = 0;        // layers that keep a recurrent state
  int64_t conv_rows = 0;      // input rows kept for the causal convolution (kernel size - 1)
  int64_t conv_channels = 0;  // channels of the convolution (q, k and v together)
  int64_t n_head = 0;         // state matrices per layer (value heads)
  int64_t head_dim_k = 0;
  int64_t head_dim_v = 0;

  int64_t conv_floats() const { return conv_rows * conv_channels; }
  int64_t ssm_floats() const { return n_head * head_dim_v * head_dim_k; }
  int64_t floats_per_sequence() const { return n_layer * (conv_floats() + ssm_floats()); }
};

// The state of up to n_seq sequences plus named snapshots. A sequence's storage is allocated
// (zeroed: the state before any token) on first use and freed by reset(), so memory grows with
// the sequences actually in use: shape.floats_per_sequence() floats each, and as much per
// snapshot. All F32.
// Not thread-safe. conv()/ssm() allocate on first use; a forward pass takes every pointer it
// needs before going parallel, then threads write disjoint (layer, sequence, head) blocks.
class RecurrentState {
 public:
  // InvalidArgument for a shape with negative sizes or n_seq < 1.
  static Result<RecurrentState> create(const RecurrentShape& shape, int n_seq);

  const RecurrentShape& shape() const { return shape_; }
  int n_seq() const { return static_cast<int>(seqs_.size()); }

  // The convolution window of recurrent layer `layer` for `seq`: [conv_rows][conv_channels],
  // oldest row first. REQUIRES 0 <= layer < n_layer, 0 <= seq < n_seq.
  float* conv(int64_t layer, SeqId seq);
  // The state matrices of `layer` for `seq`: [n_head][head_dim_v][head_dim_k] (per head,
  // state[j * head_dim_k + i] = S[i][j]; see kernels/reference/delta_net.h).
  float* ssm(int64_t layer, SeqId seq);

  // True when `seq` holds state (it has seen tokens since its last reset).
  bool in_use(SeqId seq) const { return !seqs_[static_cast<size_t>(seq)].empty(); }
  // Forgets `seq`'s state (seq < 0: every sequence); it restarts from zero.
  void reset(SeqId seq);
  // Makes `dst`'s state a copy of `src`'s (a reset when src holds none).
  void copy(SeqId src, SeqId dst);

  // Snapshots: a copy of one sequence's state under an integer slot, with the position of the
  // last token it absorbed. save() overwrites the slot. restore() copies the slot into `seq`
  // and returns that position; NotFound when the slot is empty. drop() frees the slot.
  void save(SeqId seq, int32_t pos, int slot);
  Result<int32_t> restore(int slot, SeqId seq);
  void drop(int slot) { snapshots_.erase(slot); }
  // Position of the snapshot in `slot`, or -1 when the slot is empty.
  int32_t snapshot_pos(int slot) const {
    const auto it = snapshots_.find(slot);
    return it == snapshots_.end() ? -1 : it->second.pos;
  }

  // Bytes held by sequences and snapshots.
  size_t memory_bytes() const;

 private:
  struct Snapshot {
    int32_t pos = -1;
    std::vector<float> data;  // empty: the zero state
  };
  std::vector<float>& storage(SeqId seq);

  RecurrentShape shape_;
  // Per sequence: for each layer, its conv window then its state matrices. Empty: all zero.
  std::vector<std::vector<float>> seqs_;
  std::map<int, Snapshot> snapshots_;
};

}  // namespace cellserve::engine
