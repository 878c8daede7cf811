#include "engine/lora/lora_apply.h"

#include <algorithm>

#include "engine/models/blocks.h"

namespace cellserve::engine {

void project(const TensorView& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool,
             const std::vector<const LoraSet*>* lora) {
  matmul(w, x, n_tokens, y, pool);
  if (lora != nullptr) add_lora_updates(w, x, n_tokens, y, pool, *lora);
}

void project_shared_input(std::span<const MatmulOut> outs, const float* x, int64_t n_tokens, ThreadPool& pool,
                          const std::vector<const LoraSet*>* lora) {
  matmul_shared_input(outs, x, n_tokens, pool);
  if (lora == nullptr) return;
  for (const MatmulOut& o : outs) add_lora_updates(*o.w, x, n_tokens, o.y, pool, *lora);
}

void add_lora_updates(const TensorView& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool,
                      const std::vector<const LoraSet*>& lora) {
  const int64_t n_in = w.shape.ne[0];
  const int64_t n_out = w.shape.ne[1];
  std::vector<const LoraSet*> done;
  for (int64_t first = 0; first < n_tokens; ++first) {
    const LoraSet* set = lora[static_cast<size_t>(first)];
    if (set == nullptr || set->empty() || std::find(done.begin(), done.end(), set) != done.end()) continue;
    done.push_back(set);
    // The rows using this set; gathered only when some other row does not.
    std::vector<int64_t> rows;
    for (int64_t t = first; t < n_tokens; ++t) {
      if (lora[static_cast<size_t>(t)] == set) rows.push_back(t);
    }
    const auto m = static_cast<int64_t>(rows.size());
    std::vector<float> gathered;
    const float* xs = x;
    for (const ScaledLora& entry : *set) {
      const LoraTensor* f = entry.adapter->find(w.data.data());
      if (f == nullptr || entry.scale == 0.0f) continue;
      if (m != n_tokens && gathered.empty()) {
        gathered.resize(static_cast<size_t>(m * n_in));
        for (int64_t j = 0; j < m; ++j) std::copy_n(x + rows[static_cast<size_t>(j)] * n_in, n_in, &gathered[j * n_in]);
        xs = gathered.data();
      }
      std::vector<float> ax(static_cast<size_t>(m * f->rank));
      std::vector<float> bax(static_cast<size_t>(m * n_out));
      matmul(f->a, xs, m, ax.data(), pool);
      matmul(f->b, ax.data(), m, bax.data(), pool);
      const float s = entry.adapter->effective_scale(entry.scale, f->rank);
      for (int64_t j = 0; j < m; ++j) {
        float* yr = y + rows[static_cast<size_t>(j)] * n_out;
        const float* br = bax.data() + j * n_out;
        for (int64_t i = 0; i < n_out; ++i) yr[i] += s * br[i];
      }
    }
  }
}

OutputRows gather_output_rows(const Batch& batch, const float* x, int64_t width,
                              const std::vector<const LoraSet*>* lora) {
  OutputRows out;
  for (int64_t t = 0; t < batch.size(); ++t) {
    if (!batch.output[static_cast<size_t>(t)]) continue;
    out.x.insert(out.x.end(), x + t * width, x + (t + 1) * width);
    if (lora != nullptr) out.lora.push_back((*lora)[static_cast<size_t>(t)]);
    ++out.n;
  }
  return out;
}

}  // namespace cellserve::engine
