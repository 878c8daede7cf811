// Helpers shared by the quant tests and the quant_rmse_report tool: a portable deterministic
// RNG (std::normal_distribution differs between standard libraries), error metrics, and a
// whole-buffer quantize/dequantize round trip.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "engine/quant/ggml_type.h"
#include "engine/quant/quantize.h"

namespace cellserve::testing {

// Deterministic on every platform: mt19937 is fully specified; the transforms are ours.
class TestRng {
 public:
  explicit TestRng(uint32_t seed) : gen_(seed) {}
  // Uniform in [0, 1).
  double uniform() { return static_cast<double>(gen_() >> 5) * (1.0 / 134217728.0); }
  float uniform(float lo, float hi) { return lo + static_cast<float>(uniform()) * (hi - lo); }
  // N(0, 1) by Box-Muller.
  float normal() {
    const double u1 = 1.0 - uniform();  // (0, 1]
    const double u2 = uniform();
    return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
  }
  // Roughly N(0, 1) (Irwin-Hall, 4 terms) using only exact arithmetic, so the values are
  // bit-identical on every platform and libm (for byte digests of quantized output).
  float exact_normal() {
    const uint32_t s = (gen_() >> 8) + (gen_() >> 8) + (gen_() >> 8) + (gen_() >> 8);  // < 2^26
    return (static_cast<float>(s) * 0x1p-24f - 2.0f) * 1.7320508f;
  }

 private:
  std::mt19937 gen_;
};

inline std::vector<float> normal_values(size_t n, uint32_t seed, float scale = 1.0f) {
  TestRng rng(seed);
  std::vector<float> v(n);
  for (float& x : v) x = scale * rng.normal();
  return v;
}

inline std::vector<float> uniform_values(size_t n, uint32_t seed, float lo, float hi) {
  TestRng rng(seed);
  std::vector<float> v(n);
  for (float& x : v) x = rng.uniform(lo, hi);
  return v;
}

// sqrt(mean((a - b)^2)), accumulated in double.
inline double rmse(const float* a, const float* b, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(a[i]) - static_cast<double>(b[i]);
    s += d * d;
  }
  return n == 0 ? 0.0 : std::sqrt(s / static_cast<double>(n));
}

inline double rms(const float* a, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; ++i) s += static_cast<double>(a[i]) * static_cast<double>(a[i]);
  return n == 0 ? 0.0 : std::sqrt(s / static_cast<double>(n));
}

// Quantizes `x` (size a multiple of the block size) as `type` and decodes it again.
inline std::vector<float> round_trip(engine::GgmlType type, const std::vector<float>& x) {
  std::vector<uint8_t> q(engine::ggml_row_size(type, static_cast<int64_t>(x.size())));
  engine::quantize_row(type, x.data(), q.data(), static_cast<int64_t>(x.size()));
  std::vector<float> y(x.size());
  engine::dequantize_row(type, q.data(), y.data(), static_cast<int64_t>(x.size()));
  return y;
}

// Bits per weight of `type`.
inline double bits_per_weight(engine::GgmlType type) {
  return 8.0 * static_cast<double>(engine::ggml_type_size(type)) / static_cast<double>(engine::ggml_block_size(type));
}

}  // namespace cellserve::testing
