#include "engine/simulated/simulated_model.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "engine/simulated/simulated_gguf.h"

namespace cellserve::engine::simulated {
namespace {

// One KV layer with one head of 32 elements: enough bytes for an AnswerState in every cache type
// (F32, F16, Q8_0: 34 bytes a row). The row holds the state's raw bytes, never numbers.
constexpr int64_t kHeadDim = 32;
static_assert(sizeof(AnswerState) <= 34);

// The chosen token's logit margin: 60 nats, so any usual temperature samples it.
constexpr float kChosenLogit = 30.0f;
constexpr float kOtherLogit = -30.0f;

// The answer state after any prompt token of a canned simulator (SimulateOptions::canned).
constexpr uint64_t kCannedSeed = 0x63616E6E6564ull;

}  // namespace

Result<std::shared_ptr<const SimulatedModel>> SimulatedModel::create(const SimulateOptions& options) {
  CS_ASSIGN_OR_RETURN(std::shared_ptr<const GgufFile> file, simulated_gguf());
  CS_ASSIGN_OR_RETURN(const tokenizer::Tokenizer tok, tokenizer::Tokenizer::from_gguf(*file));
  ModelInfo info;
  info.architecture = std::string(kSimulatedArchitecture);
  info.name = "cellserve-simulated";
  info.n_vocab = tok.n_vocab();
  info.n_embd = kHeadDim;
  info.n_layer = 1;
  info.n_ctx_train = int64_t{1} << 20;
  info.kv_shape = KvCacheShape{1, 1, kHeadDim, kHeadDim};
  return std::shared_ptr<const SimulatedModel>(new SimulatedModel(std::move(file), std::move(info), options, tok));
}

SimulatedModel::SimulatedModel(std::shared_ptr<const GgufFile> file, ModelInfo info, const SimulateOptions& options,
                               const tokenizer::Tokenizer& tok)
    : Model(std::move(file), std::move(info)), options_(options), text_(tok) {}

AnswerState SimulatedModel::state_before(const ForwardArgs& args, SeqId seq, int32_t pos) const {
  const KvCache& kv = *args.kv;
  AnswerState s = AnswerText::start();
  if (pos == 0) return s;
  auto holds_previous = [&](int64_t c) { return kv.cell_pos(c) == pos - 1 && kv.visible(c, seq, pos - 1); };
  {
    std::lock_guard lock(hints_mu_);
    const auto hint = last_cell_.find({&kv, seq});
    if (hint != last_cell_.end() && hint->second < kv.n_cells() && holds_previous(hint->second)) {
      std::memcpy(&s, kv.key(0, hint->second, 0), sizeof s);
      return s;
    }
  }
  for (int64_t c = 0, end = kv.scan_end(); c < end; ++c) {
    if (holds_previous(c)) {
      std::memcpy(&s, kv.key(0, c, 0), sizeof s);
      return s;
    }
  }
  return s;  // no earlier cell (the scheduler always keeps them): start afresh
}

void SimulatedModel::remember(const KvCache* kv, SeqId seq, int32_t cell) const {
  std::lock_guard lock(hints_mu_);
  last_cell_[{kv, seq}] = cell;
}

void SimulatedModel::forward(const ForwardArgs& args) const {
  const Batch& batch = *args.batch;
  const int64_t n_vocab = info().n_vocab;
  // The last token of each sequence seen in this batch: where its next token continues.
  struct Latest {
    SeqId seq;
    int32_t pos;
    int32_t cell;
    AnswerState state;
  };
  std::vector<Latest> latest;
  int64_t prompt = 0;
  int64_t answer = 0;
  int64_t out_row = 0;
  for (int64_t i = 0; i < batch.size(); ++i) {
    const auto k = static_cast<size_t>(i);
    const SeqId seq = batch.seq[k];
    const int32_t pos = batch.pos[k];
    auto it = std::find_if(latest.begin(), latest.end(), [&](const Latest& e) { return e.seq == seq; });
    const AnswerState before = it != latest.end() && it->pos == pos - 1 ? it->state : state_before(args, seq, pos);
    bool continued = false;
    AnswerState now = text_.after(before, batch.tokens[k], &continued);
    // canned=1: every prompt token leaves the same state, so every prompt gets the same answer.
    if (options_.canned && !continued) now = AnswerState{kCannedSeed, 0, 0};
    ++(continued ? answer : prompt);
    const int32_t cell = (*args.cells)[k];
    std::memcpy(args.kv->key(0, cell, 0), &now, sizeof now);
    if (it == latest.end()) {
      latest.push_back({seq, pos, cell, now});
    } else {
      *it = {seq, pos, cell, now};
    }
    if (batch.output[k] != 0) {
      float* row = args.logits + out_row * n_vocab;
      std::fill(row, row + n_vocab, kOtherLogit);
      row[text_.next_token(now)] = kChosenLogit;
      ++out_row;
    }
  }
  for (const Latest& e : latest) remember(args.kv, e.seq, e.cell);
  prompt_tokens_ += prompt;
  answer_tokens_ += answer;
  int seen = max_sequences_.load();
  const int n_seq = static_cast<int>(latest.size());
  while (n_seq > seen && !max_sequences_.compare_exchange_weak(seen, n_seq)) {}
  const double seconds =
      static_cast<double>(prompt) / options_.prefill_tps + (answer > 0 ? 1.0 / options_.decode_tps : 0.0);
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
}

}  // namespace cellserve::engine::simulated
