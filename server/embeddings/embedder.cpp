#include "server/embeddings/embedder.h"

#include <algorithm>
#include <string>
#include <string_view>

#include "engine/runtime/batch.h"
#include "engine/runtime/probe.h"

namespace cellserve::server::embeddings {

namespace {

// Hands each "result_norm" row of a forward pass to the pooler of the row's input. The rows come
// in batch order of the output tokens, which is the order of `row_input`.
class PoolingSink : public engine::ProbeSink {
 public:
  PoolingSink(const std::vector<size_t>& row_input, std::vector<Pooler>& poolers)
      : row_input_(row_input), poolers_(poolers) {}

  void record(std::string_view name, int /*layer*/, const float* data, int64_t n_tokens, int64_t width) override {
    if (name != "result_norm") return;
    for (int64_t r = 0; r < n_tokens; ++r, ++next_) {
      if (next_ >= row_input_.size()) {
        mismatch_ = true;
        return;
      }
      poolers_[row_input_[next_]].add(std::span<const float>(data + r * width, static_cast<size_t>(width)));
    }
  }
  // Rows received since the last reset(); false when more came than asked for.
  bool complete() const { return !mismatch_ && next_ == row_input_.size(); }
  void reset() {
    next_ = 0;
    mismatch_ = false;
  }

 private:
  const std::vector<size_t>& row_input_;
  std::vector<Pooler>& poolers_;
  size_t next_ = 0;
  bool mismatch_ = false;
};

// Detaches the probe however embed_group() returns.
class ProbeScope {
 public:
  ProbeScope(engine::Context& ctx, engine::ProbeSink* sink) : ctx_(ctx) { ctx_.set_probe(sink); }
  ~ProbeScope() { ctx_.set_probe(nullptr); }
  ProbeScope(const ProbeScope&) = delete;
  ProbeScope& operator=(const ProbeScope&) = delete;

 private:
  engine::Context& ctx_;
};

}  // namespace

Result<std::unique_ptr<Embedder>> Embedder::create(std::shared_ptr<const engine::Model> model,
                                                   const EmbedderOptions& options) {
  if (model == nullptr) return Status::invalid_argument("no model to embed with");
  engine::ContextParams params;
  params.n_ctx = options.n_ctx;
  params.n_batch = options.n_batch;
  params.n_threads = options.n_threads;
  params.n_seq_max = kMaxSequences;
  params.kv_type = options.kv_type;
  const int64_t row_bytes = std::max<int64_t>(1, model->info().n_vocab) * static_cast<int64_t>(sizeof(float));
  const int64_t max_rows =
      options.max_output_rows > 0 ? options.max_output_rows : std::max<int64_t>(1, kMaxLogitBytes / row_bytes);
  CS_ASSIGN_OR_RETURN(std::unique_ptr<engine::Context> ctx, engine::Context::create(std::move(model), params));
  return std::unique_ptr<Embedder>(new Embedder(std::move(ctx), options, max_rows));
}

Embedder::Embedder(std::unique_ptr<engine::Context> ctx, const EmbedderOptions& options, int64_t max_output_rows)
    : ctx_(std::move(ctx)), options_(options), max_output_rows_(max_output_rows) {}

Result<std::vector<Embedding>> Embedder::embed(std::span<const std::vector<int32_t>> inputs,
                                               const std::function<bool()>& should_stop) {
  const int64_t n_vocab = ctx_->model().info().n_vocab;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const auto n = static_cast<int64_t>(inputs[i].size());
    if (n == 0) return Status::invalid_argument("input " + std::to_string(i) + " is empty");
    if (n > options_.n_ctx) {
      return Status::invalid_argument("input " + std::to_string(i) + " has " + std::to_string(n) +
                                      " tokens, more than the " + std::to_string(options_.n_ctx) +
                                      " of the embedding context");
    }
    for (int32_t t : inputs[i]) {
      if (t < 0 || t >= n_vocab) {
        return Status::invalid_argument("input " + std::to_string(i) + ": token id " + std::to_string(t) +
                                        " is out of range [0, " + std::to_string(n_vocab) + ")");
      }
    }
  }
  std::vector<Embedding> out;
  out.reserve(inputs.size());
  // Consecutive inputs share a batch while they fit the cache and the sequence ids.
  size_t first = 0;
  while (first < inputs.size()) {
    size_t last = first;
    int64_t tokens = 0;
    while (last < inputs.size() && last - first < static_cast<size_t>(kMaxSequences) &&
           tokens + static_cast<int64_t>(inputs[last].size()) <= options_.n_ctx) {
      tokens += static_cast<int64_t>(inputs[last].size());
      ++last;
    }
    CS_RETURN_IF_ERROR(embed_group(inputs.subspan(first, last - first), should_stop, &out));
    first = last;
  }
  return out;
}

Status Embedder::embed_group(std::span<const std::vector<int32_t>> inputs, const std::function<bool()>& should_stop,
                             std::vector<Embedding>* out) {
  // A clean cache (and recurrent state) whatever an earlier call left behind.
  CS_RETURN_IF_ERROR(ctx_->seq_rm(-1));
  const Pooling pooling = options_.pooling;
  std::vector<Pooler> poolers(inputs.size(), Pooler(pooling, width()));
  std::vector<size_t> row_input;  // the input of each output row of the pending batch
  PoolingSink sink(row_input, poolers);
  ProbeScope probe(*ctx_, &sink);
  engine::Batch batch;
  auto run = [&]() -> Status {
    if (batch.size() == 0) return {};
    if (should_stop && should_stop()) return Status::unavailable("stopped before the embedding was complete");
    sink.reset();
    CS_RETURN_IF_ERROR(ctx_->decode(batch));
    if (!sink.complete()) {
      return Status::internal("the model reported no final hidden state for " + std::to_string(row_input.size()) +
                              " output rows (architecture " + ctx_->model().info().architecture + ")");
    }
    batch.clear();
    row_input.clear();
    return {};
  };
  // Input after input, each its own sequence; a pass ends at n_batch tokens or at the output
  // rows the logits budget allows. A later pass of the same input attends to the cells the
  // earlier ones stored.
  for (size_t s = 0; s < inputs.size(); ++s) {
    const auto n = static_cast<int64_t>(inputs[s].size());
    for (int64_t pos = 0; pos < n; ++pos) {
      const bool read = pooling_reads(pooling, pos, n);
      batch.add(inputs[s][static_cast<size_t>(pos)], static_cast<int32_t>(pos), static_cast<engine::SeqId>(s), read);
      if (read) row_input.push_back(s);
      if (batch.size() >= options_.n_batch || static_cast<int64_t>(row_input.size()) >= max_output_rows_) {
        CS_RETURN_IF_ERROR(run());
      }
    }
  }
  CS_RETURN_IF_ERROR(run());
  for (Pooler& p : poolers) {
    Embedding e;
    e.n_rows = p.n_rows();
    e.values = p.finish();
    out->push_back(std::move(e));
  }
  return ctx_->seq_rm(-1);
}

}  // namespace cellserve::server::embeddings
