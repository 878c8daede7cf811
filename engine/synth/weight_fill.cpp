#include "engine/synth/weight_fill.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <numbers>
#include <system_error>
#include <thread>
#include <vector>

#include "engine/quant/quantize.h"

namespace cellserve::engine::synth {
namespace {

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001B3ull;
  return h;
}

// xoshiro256** (Blackman & Vigna), seeded through splitmix64.
class Rng {
 public:
  explicit Rng(uint64_t seed) {
    for (auto& w : s_) w = splitmix64(seed);
  }
  uint64_t next() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  // Uniform in [0, 1) with 24 random bits (exact in float).
  float uniform() { return static_cast<float>(next() >> 40) * 0x1.0p-24f; }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

// out[i] = mean + scale * N(0, 1), by Box-Muller in float: each pair of uniforms gives two
// normals (u1 in (0, 1], so the radius is finite: |z| <= 5.8).
void fill_normal(Rng& rng, float* out, int64_t n, float mean, float scale) {
  constexpr float kTwoPi = 2.0f * std::numbers::pi_v<float>;
  for (int64_t i = 0; i < n; i += 2) {
    const float u1 = 1.0f - rng.uniform();
    const float u2 = rng.uniform();
    const float r = scale * std::sqrt(-2.0f * std::log(u1));
    out[i] = mean + r * std::cos(kTwoPi * u2);
    if (i + 1 < n) out[i + 1] = mean + r * std::sin(kTwoPi * u2);
  }
}

// Llama 3 rope scaling factors, as convert_hf_to_gguf.py's LlamaModel.generate_extra_tensors
// computes them (float32 frequencies, per-frequency factor 1, `factor` or the smooth blend).
void rope_freqs_row(const RopeFreqParams& p, int64_t n, float* out) {
  const float dim = static_cast<float>(p.head_dim);
  const float old_ctx = static_cast<float>(p.scaling.original_context);
  const float low_wavelen = old_ctx / p.scaling.low_freq_factor;
  const float high_wavelen = old_ctx / p.scaling.high_freq_factor;
  for (int64_t i = 0; i < n; ++i) {
    const float freq = 1.0f / std::pow(p.rope_base, static_cast<float>(2 * i) / dim);
    const float wavelen = 2.0f * std::numbers::pi_v<float> / freq;
    if (wavelen < high_wavelen) {
      out[i] = 1.0f;
    } else if (wavelen > low_wavelen) {
      out[i] = p.scaling.factor;
    } else {
      const float smooth =
          (old_ctx / wavelen - p.scaling.low_freq_factor) / (p.scaling.high_freq_factor - p.scaling.low_freq_factor);
      out[i] = 1.0f / ((1.0f - smooth) / p.scaling.factor + smooth);
    }
  }
}

}  // namespace

RopeFreqParams rope_freq_params(const ModelShape& shape) {
  RopeFreqParams p;
  p.head_dim = shape.head_dim;
  p.rope_base = shape.rope_base;
  if (shape.llama3_rope) p.scaling = *shape.llama3_rope;
  return p;
}

void master_row(const PlannedTensor& t, const RopeFreqParams& rope, uint64_t seed, int64_t row, float* out) {
  const int64_t n = t.shape.ne[0];
  if (t.init.kind == InitKind::RopeFreqs) {
    rope_freqs_row(rope, n, out);
    return;
  }
  uint64_t state = seed ^ fnv1a(t.name);
  const uint64_t tensor_seed = splitmix64(state);
  uint64_t row_state = tensor_seed + static_cast<uint64_t>(row) * 0xD1B54A32D192ED03ull;
  Rng rng(splitmix64(row_state));
  const float scale = t.init.scale;
  switch (t.init.kind) {
    case InitKind::Normal:
      fill_normal(rng, out, n, 0.0f, scale);
      break;
    case InitKind::Norm:
      fill_normal(rng, out, n, 1.0f, scale);
      break;
    case InitKind::Uniform:
      for (int64_t i = 0; i < n; ++i) out[i] = scale * (2.0f * rng.uniform() - 1.0f);
      break;
    case InitKind::SsmA: {
      const float lo = std::log(0.1f), hi = std::log(2.0f);
      for (int64_t i = 0; i < n; ++i) out[i] = -std::exp(lo + rng.uniform() * (hi - lo));
      break;
    }
    case InitKind::RopeFreqs:
      break;  // handled above
  }
}

GgufWriter::TensorFiller make_filler(const PlannedTensor& t, const RopeFreqParams& rope, uint64_t seed, int n_threads) {
  return [t, rope, seed, n_threads](std::span<std::byte> out) {
    const int64_t n = t.shape.ne[0];
    const int64_t rows = t.shape.rows();
    const size_t row_bytes = ggml_row_size(t.type, n);
    constexpr int64_t kRowsPerTask = 16;
    std::atomic<int64_t> next_row{0};
    auto work = [&] {
      std::vector<float> buf(static_cast<size_t>(n));
      for (int64_t r0; (r0 = next_row.fetch_add(kRowsPerTask)) < rows;) {
        for (int64_t r = r0; r < std::min(rows, r0 + kRowsPerTask); ++r) {
          master_row(t, rope, seed, r, buf.data());
          quantize_row(t.type, buf.data(), out.data() + static_cast<size_t>(r) * row_bytes, n);
        }
      }
    };
    int64_t threads = n_threads > 0 ? n_threads : static_cast<int64_t>(std::thread::hardware_concurrency());
    threads = std::max<int64_t>(1, std::min(threads, (rows + kRowsPerTask - 1) / kRowsPerTask));
    std::vector<std::thread> pool;
    for (int64_t i = 1; i < threads; ++i) {
      try {
        pool.emplace_back(work);
      } catch (const std::system_error&) {
        break;  // no more threads available: the ones we have (and this one) finish the rows
      }
    }
    work();
    for (auto& th : pool) th.join();
  };
}

}  // namespace cellserve::engine::synth
