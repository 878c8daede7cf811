#include "server/memory_estimate.h"

#include <algorithm>
#include <cstdio>

#include "engine/gguf/gguf_file.h"
#include "engine/quant/ggml_type.h"
#include "engine/runtime/kv_type.h"

namespace cellserve::server {
namespace {

// Per token of a batch, the forward pass keeps a few rows of the model's width (residual,
// normalised input, attention and FFN outputs, Q/K/V) and of the FFN's (gate, up): counted as 8
// and 3 rows of F32, plus the batch's logits. An estimate that errs high, checked against the
// allocations by hand for qwen3 and qwen35 (docs/phones.md).
constexpr int64_t kEmbdRowsPerToken = 8;
constexpr int64_t kFfnRowsPerToken = 3;

int64_t meta_int(const engine::GgufFile& f, const std::string& arch, const char* key, int64_t fallback) {
  const auto v = f.get_int(arch + "." + key);
  return v && *v > 0 ? *v : fallback;
}

}  // namespace

std::string human_bytes(uint64_t bytes) {
  char buf[32];
  if (bytes >= (1ull << 40)) {
    std::snprintf(buf, sizeof buf, "%.1f TiB", static_cast<double>(bytes) / static_cast<double>(1ull << 40));
  } else if (bytes >= (1ull << 30)) {
    std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(bytes) / static_cast<double>(1ull << 30));
  } else {
    std::snprintf(buf, sizeof buf, "%llu MiB", static_cast<unsigned long long>((bytes + (1ull << 19)) >> 20));
  }
  return buf;
}

std::string MemoryEstimate::describe() const {
  std::string out =
      human_bytes(total()) + " (weights " + human_bytes(weights_bytes) + " + KV cache " + human_bytes(kv_bytes);
  if (recurrent_bytes > 0) out += " + recurrent state " + human_bytes(recurrent_bytes);
  return out + " + scratch " + human_bytes(scratch_bytes) + ")";
}

Result<MemoryEstimate> estimate_serve_memory(const MemoryEstimateInput& in) {
  CS_ASSIGN_OR_RETURN(const engine::GgmlType kv_type, engine::parse_kv_type(in.kv_type));
  CS_ASSIGN_OR_RETURN(const engine::GgufFile f, engine::GgufFile::open(in.model_path));
  MemoryEstimate e;
  for (const engine::GgufTensorInfo& t : f.tensors()) e.weights_bytes += t.size_bytes;

  const std::string arch = f.get_string("general.architecture").value_or("");
  const int64_t n_embd = meta_int(f, arch, "embedding_length", 0);
  const int64_t n_layer_all = meta_int(f, arch, "block_count", 0);
  const int64_t n_layer = std::max<int64_t>(0, n_layer_all - f.get_int(arch + ".nextn_predict_layers").value_or(0));
  const int64_t n_head = meta_int(f, arch, "attention.head_count", 1);
  const int64_t n_head_kv = meta_int(f, arch, "attention.head_count_kv", n_head);
  const int64_t head_k = meta_int(f, arch, "attention.key_length", n_embd / n_head);
  const int64_t head_v = meta_int(f, arch, "attention.value_length", head_k);
  const int64_t n_ff = meta_int(f, arch, "feed_forward_length", 4 * n_embd);
  int64_t n_vocab = 0;
  if (const engine::GgufTensorInfo* emb = f.find_tensor("token_embd.weight"); emb != nullptr && emb->shape.n_dims > 1) {
    n_vocab = emb->shape.ne[1];
  }

  // Gated DeltaNet models (qwen35): every full_attention_interval-th layer has attention; the
  // others keep a convolution window and a state matrix per value head.
  int64_t n_attention = n_layer;
  if (const auto inner = f.get_int(arch + ".ssm.inner_size"); inner && *inner > 0) {
    const int64_t interval = meta_int(f, arch, "full_attention_interval", 4);
    n_attention = n_layer / interval;
    const int64_t n_recurrent = n_layer - n_attention;
    const int64_t state_k = meta_int(f, arch, "ssm.state_size", 0);
    const int64_t n_k_heads = meta_int(f, arch, "ssm.group_count", 1);
    const int64_t n_v_heads = meta_int(f, arch, "ssm.time_step_rank", 1);
    const int64_t conv_rows = meta_int(f, arch, "ssm.conv_kernel", 1) - 1;
    const int64_t head_dim_v = *inner / n_v_heads;
    const int64_t conv_channels = 2 * n_k_heads * state_k + n_v_heads * head_dim_v;
    const int64_t floats_per_seq = n_recurrent * (conv_rows * conv_channels + n_v_heads * head_dim_v * state_k);
    const uint64_t per_seq = static_cast<uint64_t>(floats_per_seq) * sizeof(float);
    // Snapshots: every 1,024 prompt tokens of the cells, and the end of each slot's sequence, as
    // far as the prefix cache's budget lets them stay.
    const uint64_t snapshots = per_seq * static_cast<uint64_t>(in.ctx_size / 1024 + in.parallel);
    const uint64_t budget = static_cast<uint64_t>(std::max<int64_t>(0, in.prefix_cache_mb)) << 20;
    e.recurrent_bytes = per_seq * static_cast<uint64_t>(in.parallel) + std::min(snapshots, budget);
  }
  const uint64_t row_k = engine::ggml_row_size(kv_type, head_k);
  const uint64_t row_v = engine::ggml_row_size(kv_type, head_v);
  e.kv_bytes = static_cast<uint64_t>(n_attention) * static_cast<uint64_t>(in.ctx_size) *
               static_cast<uint64_t>(n_head_kv) * (row_k + row_v);
  const int64_t batch = std::max<int64_t>(in.batch_size, in.parallel);
  e.scratch_bytes = static_cast<uint64_t>(batch) *
                    static_cast<uint64_t>(kEmbdRowsPerToken * n_embd + kFfnRowsPerToken * n_ff + n_vocab) *
                    sizeof(float);
  return e;
}

std::string insufficient_memory(const MemoryEstimate& estimate, uint64_t available_bytes) {
  if (estimate.total() <= available_bytes) return "";
  return "insufficient_memory: needs " + estimate.describe() + "; " + human_bytes(available_bytes) + " free";
}

}  // namespace cellserve::server
