#include "engine/models/blocks.h"

#include <cmath>
#include <cstring>

#include "base/half.h"
#include "engine/kernels/kernel_table.h"
#include "engine/quant/quantize.h"

namespace cellserve::engine {

void rms_norm(const float* x, std::span<const float> w, float* y, int64_t n_rows, int64_t n, float eps) {
  for (int64_t r = 0; r < n_rows; ++r) {
    const float* xr = x + r * n;
    float* yr = y + r * n;
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(xr[i] * xr[i]);
    const float mean = static_cast<float>(sum / static_cast<double>(n));
    const float scale = 1.0f / std::sqrt(mean + eps);
    for (int64_t i = 0; i < n; ++i) yr[i] = xr[i] * scale;
    if (!w.empty()) {
      for (int64_t i = 0; i < n; ++i) yr[i] *= w[static_cast<size_t>(i)];
    }
  }
}

void matmul(const TensorView& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool) {
  const auto& table = kernels::active_kernels();
  const kernels::WeightKernels& k = table.for_weight(w.type);
  const int64_t n_in = w.shape.ne[0];
  const int64_t n_out = w.shape.ne[1];
  const size_t act_row = ggml_row_size(k.activation_type, n_in);
  const size_t w_row = ggml_row_size(w.type, n_in);
  std::vector<std::byte> act(act_row * static_cast<size_t>(n_tokens));
  const kernels::FromFloatFn convert = table.converter(k.activation_type);
  pool.parallel_for(n_tokens, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) convert(x + t * n_in, act.data() + static_cast<size_t>(t) * act_row, n_in);
  });
  const std::byte* wdata = w.data.data();
  pool.parallel_for(n_out, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const std::byte* wr = wdata + static_cast<size_t>(r) * w_row;
      for (int64_t t = 0; t < n_tokens; ++t) {
        y[t * n_out + r] = k.vec_dot(n_in, wr, act.data() + static_cast<size_t>(t) * act_row);
      }
    }
  });
}

void add_bias(float* y, std::span<const float> b, int64_t n_tokens) {
  const auto n = static_cast<int64_t>(b.size());
  for (int64_t t = 0; t < n_tokens; ++t) {
    for (int64_t i = 0; i < n; ++i) y[t * n + i] += b[static_cast<size_t>(i)];
  }
}

void get_embedding_row(const TensorView& embd, int32_t token, float* out) {
  dequantize_row(embd.type, embd.row(token).data(), out, embd.shape.ne[0]);
}

namespace {

// ggml's YaRN helpers (ggml-cpu ops.cpp / ggml.c), kept in float like the original.
float yarn_corr_dim(int n_dims, int n_ctx_orig, float n_rot, float base) {
  return static_cast<float>(n_dims) *
         std::log(static_cast<float>(n_ctx_orig) / (n_rot * 2.0f * static_cast<float>(M_PI))) / (2.0f * std::log(base));
}

float yarn_ramp(float low, float high, int i0) {
  const float y = (static_cast<float>(i0 / 2) - low) / std::fmax(0.001f, high - low);
  return 1.0f - std::fmin(1.0f, std::fmax(0.0f, y));
}

// For Mrope/Imrope: whether rotated pair `pair` takes its angle from the text position (one of
// the first three streams) rather than the fourth stream (ggml_mrope_cache_init's sectors).
bool multi_section_uses_pos(const RopeParams& p, int pair) {
  if (p.type != RopeType::Mrope && p.type != RopeType::Imrope) return true;
  const auto& s = p.sections;
  const int sect_dims = s[0] + s[1] + s[2] + s[3];
  if (sect_dims <= 0) return true;
  const int sector = pair % sect_dims;
  if (p.type == RopeType::Imrope) {
    return (sector % 3 == 1 && sector < 3 * s[1]) || (sector % 3 == 2 && sector < 3 * s[2]) ||
           (sector % 3 == 0 && sector < 3 * s[0]);
  }
  return sector < s[0] + s[1] + s[2];
}

// Fills cache[i0], cache[i0+1] with cos/sin for each rotated pair at position `pos`, advancing
// theta multiplicatively exactly as ggml_rope_cache_init does.
void rope_cache(float pos, const RopeParams& p, const float corr[2], std::vector<float>& cache) {
  const float theta_scale = std::pow(p.freq_base, -2.0f / static_cast<float>(p.n_rot));
  float theta = pos;
  for (int i0 = 0; i0 < p.n_rot; i0 += 2) {
    const float ff = p.freq_factors.empty() ? 1.0f : p.freq_factors[static_cast<size_t>(i0 / 2)];
    // A multi-section pair on the fourth stream (position 0 for text) keeps angle 0.
    const float theta_extrap = (multi_section_uses_pos(p, i0 / 2) ? theta : 0.0f) / ff;
    const float theta_interp = p.freq_scale * theta_extrap;
    float t = theta_interp;
    float mscale = p.attn_factor;
    if (p.ext_factor != 0.0f) {
      const float ramp_mix = yarn_ramp(corr[0], corr[1], i0) * p.ext_factor;
      t = theta_interp * (1 - ramp_mix) + theta_extrap * ramp_mix;
      mscale *= 1.0f + 0.1f * std::log(1.0f / p.freq_scale);
    }
    cache[static_cast<size_t>(i0)] = std::cos(t) * mscale;
    cache[static_cast<size_t>(i0) + 1] = std::sin(t) * mscale;
    theta *= theta_scale;
  }
}

}  // namespace

void rope(float* x, const int32_t* pos, int64_t n_tokens, int64_t n_heads, int64_t head_dim, const RopeParams& p) {
  float corr[2] = {0.0f, 0.0f};
  if (p.ext_factor != 0.0f) {
    const float start = std::floor(yarn_corr_dim(p.n_rot, p.n_ctx_orig, p.beta_fast, p.freq_base));
    const float end = std::ceil(yarn_corr_dim(p.n_rot, p.n_ctx_orig, p.beta_slow, p.freq_base));
    corr[0] = std::fmax(0.0f, start);
    corr[1] = std::fmin(static_cast<float>(p.n_rot - 1), end);
  }
  std::vector<float> cache(static_cast<size_t>(p.n_rot));
  const int64_t half = p.n_rot / 2;
  for (int64_t t = 0; t < n_tokens; ++t) {
    rope_cache(static_cast<float>(pos[t]), p, corr, cache);
    for (int64_t h = 0; h < n_heads; ++h) {
      float* v = x + (t * n_heads + h) * head_dim;
      for (int64_t i0 = 0; i0 < p.n_rot; i0 += 2) {
        const float c = cache[static_cast<size_t>(i0)];
        const float s = cache[static_cast<size_t>(i0) + 1];
        const int64_t a = p.type == RopeType::Norm ? i0 : i0 / 2;
        const int64_t b = p.type == RopeType::Norm ? i0 + 1 : i0 / 2 + half;
        const float x0 = v[a];
        const float x1 = v[b];
        v[a] = x0 * c - x1 * s;
        v[b] = x0 * s + x1 * c;
      }
    }
  }
}

void store_kv(KvCache& kv, int64_t kv_layer, const float* k, const float* v, const std::vector<int32_t>& cells) {
  const auto& table = kernels::active_kernels();
  const kernels::FromFloatFn convert = table.converter(kv.type());
  const KvCacheShape& s = kv.shape();
  for (size_t t = 0; t < cells.size(); ++t) {
    for (int64_t h = 0; h < s.n_kv_head; ++h) {
      convert(k + (static_cast<int64_t>(t) * s.n_kv_head + h) * s.head_dim_k, kv.key(kv_layer, cells[t], h),
              s.head_dim_k);
      convert(v + (static_cast<int64_t>(t) * s.n_kv_head + h) * s.head_dim_v, kv.value(kv_layer, cells[t], h),
              s.head_dim_v);
    }
  }
}

void attention(const AttentionArgs& a, const KvCache& kv, ThreadPool& pool) {
  const auto& table = kernels::active_kernels();
  const kernels::WeightKernels& kdot = table.for_weight(kv.type());
  const kernels::FromFloatFn q_convert = table.converter(kdot.activation_type);
  const KvCacheShape& s = kv.shape();
  const int64_t group = a.n_head / s.n_kv_head;
  const int64_t n_scan = kv.scan_end();
  pool.parallel_for(a.n_tokens * a.n_head, [&](int64_t i0, int64_t i1) {
    std::vector<std::byte> q_conv(ggml_row_size(kdot.activation_type, s.head_dim_k));
    std::vector<float> scores;
    std::vector<int32_t> visible;
    std::vector<float> vrow(static_cast<size_t>(s.head_dim_v));
    std::vector<double> acc(static_cast<size_t>(s.head_dim_v));
    for (int64_t i = i0; i < i1; ++i) {
      const int64_t t = i / a.n_head;
      const int64_t h = i % a.n_head;
      const int64_t kvh = h / group;
      q_convert(a.q + (t * a.n_head + h) * s.head_dim_k, q_conv.data(), s.head_dim_k);
      scores.clear();
      visible.clear();
      float max = -INFINITY;
      for (int64_t c = 0; c < n_scan; ++c) {
        if (!kv.visible(c, a.seq[t], a.pos[t])) continue;
        const float score = kdot.vec_dot(s.head_dim_k, kv.key(a.kv_layer, c, kvh), q_conv.data()) * a.scale;
        scores.push_back(score);
        visible.push_back(static_cast<int32_t>(c));
        max = std::fmax(max, score);
      }
      double sum = 0.0;
      for (float& sc : scores) {
        sc = std::exp(sc - max);
        sum += sc;
      }
      const float inv = static_cast<float>(1.0 / sum);
      std::fill(acc.begin(), acc.end(), 0.0);
      for (size_t j = 0; j < visible.size(); ++j) {
        float p = scores[j] * inv;
        // ggml multiplies V by the probabilities converted to V's activation format.
        if (kv.type() == GgmlType::F16) p = fp16_to_fp32(fp32_to_fp16(p));
        dequantize_row(kv.type(), kv.value(a.kv_layer, visible[j], kvh), vrow.data(), s.head_dim_v);
        for (int64_t d = 0; d < s.head_dim_v; ++d)
          acc[static_cast<size_t>(d)] += static_cast<double>(p * vrow[static_cast<size_t>(d)]);
      }
      float* out = a.out + (t * a.n_head + h) * s.head_dim_v;
      for (int64_t d = 0; d < s.head_dim_v; ++d) out[d] = static_cast<float>(acc[static_cast<size_t>(d)]);
    }
  });
}

void swiglu(const float* gate, const float* up, float* h, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    h[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

}  // namespace cellserve::engine
