#include "engine/runtime/context.h"

#include <algorithm>
#include <map>
#include <string>

namespace cellserve::engine {

Result<std::unique_ptr<Context>> Context::create(std::shared_ptr<const Model> model, const ContextParams& params) {
  if (params.n_ctx < 1 || params.n_ctx > (int64_t{1} << 24)) {
    return Status::invalid_argument("ctx-size " + std::to_string(params.n_ctx) + " is out of range [1, 16777216]");
  }
  if (params.n_batch < 1) return Status::invalid_argument("batch size must be at least 1");
  if (params.n_threads < 1 || params.n_threads > 1024) {
    return Status::invalid_argument("threads " + std::to_string(params.n_threads) + " is out of range [1, 1024]");
  }
  if (params.n_seq_max < 1 || params.n_seq_max > KvCache::kMaxSequences) {
    return Status::invalid_argument("at most " + std::to_string(KvCache::kMaxSequences) + " parallel sequences");
  }
  CS_ASSIGN_OR_RETURN(KvCache kv, KvCache::create(model->info().kv_shape, params.n_ctx, params.kv_type));
  CS_ASSIGN_OR_RETURN(RecurrentState recurrent,
                      RecurrentState::create(model->info().recurrent_shape, params.n_seq_max));
  return std::unique_ptr<Context>(new Context(std::move(model), params, std::move(kv), std::move(recurrent)));
}

Context::Context(std::shared_ptr<const Model> model, const ContextParams& params, KvCache kv, RecurrentState recurrent)
    : model_(std::move(model)),
      params_(params),
      kv_(std::move(kv)),
      recurrent_(std::move(recurrent)),
      pool_(params.n_threads),
      seq_lora_(static_cast<size_t>(params.n_seq_max)) {}

Status Context::set_lora(SeqId seq, std::shared_ptr<const LoraSet> set) {
  CS_RETURN_IF_ERROR(check_seq(seq, true));
  if (set != nullptr && set->empty()) set = nullptr;
  if (set != nullptr) {
    for (const ScaledLora& entry : *set) {
      if (entry.adapter == nullptr) return Status::invalid_argument("LoRA set holds a null adapter");
    }
  }
  if (seq < 0) {
    std::fill(seq_lora_.begin(), seq_lora_.end(), set);
  } else {
    seq_lora_[static_cast<size_t>(seq)] = std::move(set);
  }
  return {};
}

const LoraSet* Context::lora(SeqId seq) const {
  if (seq < 0 || seq >= params_.n_seq_max) return nullptr;
  return seq_lora_[static_cast<size_t>(seq)].get();
}

Status Context::validate(const Batch& batch) const {
  const size_t n = batch.tokens.size();
  if (n == 0) return Status::invalid_argument("empty batch");
  if (batch.pos.size() != n || batch.seq.size() != n || batch.output.size() != n) {
    return Status::invalid_argument("batch arrays differ in length");
  }
  std::map<SeqId, int32_t> last_pos;
  for (size_t i = 0; i < n; ++i) {
    const TokenId t = batch.tokens[i];
    if (t < 0 || t >= model_->info().n_vocab) {
      return Status::invalid_argument("token id " + std::to_string(t) + " is out of range [0, " +
                                      std::to_string(model_->info().n_vocab) + ")");
    }
    const SeqId s = batch.seq[i];
    if (s < 0 || s >= params_.n_seq_max) {
      return Status::invalid_argument("sequence id " + std::to_string(s) + " is out of range [0, " +
                                      std::to_string(params_.n_seq_max) + ")");
    }
    auto it = last_pos.find(s);
    const int32_t prev = it != last_pos.end() ? it->second : kv_.seq_pos_max(s);
    if (batch.pos[i] <= prev) {
      return Status::invalid_argument("sequence " + std::to_string(s) + ": position " + std::to_string(batch.pos[i]) +
                                      " does not follow position " + std::to_string(prev));
    }
    last_pos[s] = batch.pos[i];
  }
  return {};
}

Status Context::decode(const Batch& batch) {
  CS_RETURN_IF_ERROR(validate(batch));
  const int64_t n_vocab = model_->info().n_vocab;
  const int64_t n_out = std::count(batch.output.begin(), batch.output.end(), uint8_t{1});
  logits_.resize(static_cast<size_t>(n_out * n_vocab));
  n_outputs_ = 0;

  // All cells first, so a full cache fails before anything is computed.
  std::vector<int32_t> cells;
  CS_RETURN_IF_ERROR(kv_.allocate(batch, &cells));

  // Split into chunks of n_batch tokens; each chunk attends to everything stored before it.
  int64_t out_row = 0;
  for (int64_t begin = 0; begin < batch.size(); begin += params_.n_batch) {
    const int64_t end = std::min(batch.size(), begin + params_.n_batch);
    Batch chunk;
    std::vector<int32_t> chunk_cells;
    std::vector<const LoraSet*> chunk_lora;
    bool any_lora = false;
    for (int64_t i = begin; i < end; ++i) {
      const auto k = static_cast<size_t>(i);
      chunk.add(batch.tokens[k], batch.pos[k], batch.seq[k], batch.output[k] != 0);
      chunk_cells.push_back(cells[k]);
      chunk_lora.push_back(seq_lora_[static_cast<size_t>(batch.seq[k])].get());
      any_lora = any_lora || chunk_lora.back() != nullptr;
    }
    ForwardArgs args;
    args.batch = &chunk;
    args.cells = &chunk_cells;
    args.kv = &kv_;
    args.recurrent = &recurrent_;
    args.pool = &pool_;
    args.probe = probe_;
    args.lora = any_lora ? &chunk_lora : nullptr;
    args.logits = logits_.data() + out_row * n_vocab;
    model_->forward(args);
    out_row += std::count(chunk.output.begin(), chunk.output.end(), uint8_t{1});
  }
  n_outputs_ = n_out;
  return {};
}

Status Context::check_seq(SeqId seq, bool allow_all) const {
  if ((allow_all && seq < 0) || (seq >= 0 && seq < params_.n_seq_max)) return {};
  return Status::invalid_argument("sequence id " + std::to_string(seq) + " is out of range [0, " +
                                  std::to_string(params_.n_seq_max) + ")");
}

int Context::range_coverage(SeqId seq, int32_t p0, int32_t p1) const {
  const int64_t in_range = kv_.seq_n_cells(seq, p0, p1);
  if (in_range == 0) return 0;
  return in_range == kv_.seq_n_cells(seq, 0, -1) ? 2 : 1;
}

Status Context::seq_rm(SeqId seq, int32_t p0, int32_t p1) {
  CS_RETURN_IF_ERROR(check_seq(seq, true));
  if (!is_recurrent()) {
    kv_.seq_rm(seq, p0, p1);
    return {};
  }
  // Every affected sequence must lose none or all of its positions, checked before any change.
  const SeqId first = seq < 0 ? 0 : seq;
  const SeqId last = seq < 0 ? params_.n_seq_max - 1 : seq;
  for (SeqId s = first; s <= last; ++s) {
    if (range_coverage(s, p0, p1) == 1) {
      return Status::unimplemented("sequence " + std::to_string(s) + ": cannot remove positions [" +
                                   std::to_string(p0) + ", " + (p1 < 0 ? std::string("end") : std::to_string(p1)) +
                                   ") because this model keeps a recurrent state that cannot be rewound; "
                                   "clear the whole sequence or restore a saved state");
    }
  }
  for (SeqId s = first; s <= last; ++s) {
    if ((p0 <= 0 && p1 < 0) || range_coverage(s, p0, p1) == 2) recurrent_.reset(s);
  }
  kv_.seq_rm(seq, p0, p1);
  return {};
}

Status Context::seq_cp(SeqId src, SeqId dst, int32_t p0, int32_t p1) {
  CS_RETURN_IF_ERROR(check_seq(src, false));
  CS_RETURN_IF_ERROR(check_seq(dst, false));
  if (src == dst) return {};
  if (is_recurrent()) {
    if (range_coverage(src, p0, p1) == 1) {
      return Status::unimplemented(
          "sequence " + std::to_string(src) +
          ": a recurrent model can only copy a whole sequence (its state covers every position)");
    }
    if (kv_.seq_n_cells(dst, 0, -1) != 0) {
      return Status::invalid_argument("sequence " + std::to_string(dst) +
                                      " is not empty; a recurrent model copies a sequence only into an empty one");
    }
    if (range_coverage(src, p0, p1) == 0) return {};
    recurrent_.copy(src, dst);
  }
  kv_.seq_cp(src, dst, p0, p1);
  return {};
}

Status Context::save_state(SeqId seq, int slot) {
  CS_RETURN_IF_ERROR(check_seq(seq, false));
  const int32_t pos = kv_.seq_pos_max(seq);
  if (pos < 0) return Status::invalid_argument("sequence " + std::to_string(seq) + " holds no positions to save");
  recurrent_.save(seq, pos, slot);
  return {};
}

Status Context::restore_state(SeqId seq, int slot, SeqId prefix_from) {
  CS_RETURN_IF_ERROR(check_seq(seq, false));
  if (prefix_from >= 0) CS_RETURN_IF_ERROR(check_seq(prefix_from, false));
  const int32_t pos = recurrent_.snapshot_pos(slot);
  if (pos < 0) return Status::not_found("no saved state in slot " + std::to_string(slot));
  // Every check first, so an error changes nothing.
  const SeqId holder = prefix_from >= 0 ? prefix_from : seq;
  if (kv_.seq_n_cells(holder, pos, pos + 1) == 0) {
    return Status::invalid_argument("sequence " + std::to_string(holder) + " does not hold position " +
                                    std::to_string(pos) + " where the state in slot " + std::to_string(slot) +
                                    " was saved");
  }
  if (prefix_from >= 0 && prefix_from != seq && kv_.seq_n_cells(seq, 0, -1) != 0) {
    return Status::invalid_argument("sequence " + std::to_string(seq) +
                                    " is not empty; clear it before restoring a shared prefix into it");
  }
  if (holder != seq) kv_.seq_cp(holder, seq, 0, pos + 1);
  kv_.seq_rm(seq, pos + 1, -1);
  CS_ASSIGN_OR_RETURN(const int32_t restored, recurrent_.restore(slot, seq));
  (void)restored;
  return {};
}

std::span<const float> Context::logits(int64_t i) const {
  const int64_t n_vocab = model_->info().n_vocab;
  return {logits_.data() + i * n_vocab, static_cast<size_t>(n_vocab)};
}

}  // namespace cellserve::engine
