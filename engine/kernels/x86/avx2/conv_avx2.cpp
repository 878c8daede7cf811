// The Gated DeltaNet's causal depthwise convolution with SiLU, 8 channels at a time (math and
// scalar reference: reference/delta_net.h, causal_conv1d_silu_channels). At 7,000 tokens the
// scalar loop (strided taps, one exp per value) was a twentieth of qwen35's prefill.
// - The taps come tap by tap ([kernel][n_channels], arranged once at load), so each tap of 8
//   channels is one load. They used to be transposed here, on every call: for decode's single
//   token that was half of the kernel's time.
// - Taps are summed in the reference's order (tap 0 first), by fma; SiLU takes exp_ps, the exp of
//   swiglu. Results are within rounding of the reference, not equal to it.
// - A channel's value does not depend on the range it is computed in: the range's last channels
//   go through the same 8-lane code on zero-padded copies, so splitting channels among threads
//   changes no bit.
#include <immintrin.h>

#include <cstring>

#include "engine/kernels/x86/avx2/lanes.h"
#include "engine/kernels/x86/avx2/legacy_kernels.h"

namespace cellserve::engine::kernels::x86 {
namespace {

// silu(s) = s / (1 + e^-s); for s << 0, e^-s is +inf and the quotient a signed zero.
inline __m256 silu8(__m256 s) {
  const __m256 e = exp_ps(_mm256_sub_ps(_mm256_setzero_ps(), s));
  return _mm256_div_ps(s, _mm256_add_ps(_mm256_set1_ps(1.0f), e));
}

}  // namespace

void causal_conv1d_silu_channels(const float* x, int64_t x_stride, int64_t n_tokens, int64_t n_channels, int64_t c0,
                                 int64_t c1, const float* taps, int64_t kernel, const float* window, float* y) {
  if (c1 <= c0 || n_tokens <= 0) return;
  const int64_t keep = kernel - 1;
  // Row r of the extended input: the window's rows first, then the new tokens.
  auto row = [&](int64_t r) { return r < keep ? window + r * n_channels : x + (r - keep) * x_stride; };
  const int64_t n = c1 - c0;
  const int64_t full = n / 8 * 8;
  for (int64_t t = 0; t < n_tokens; ++t) {
    float* yt = y + t * n_channels + c0;
    for (int64_t i = 0; i < full; i += 8) {
      __m256 sum = _mm256_setzero_ps();
      for (int64_t j = 0; j < kernel; ++j) {
        sum =
            _mm256_fmadd_ps(_mm256_loadu_ps(row(t + j) + c0 + i), _mm256_loadu_ps(taps + j * n_channels + c0 + i), sum);
      }
      _mm256_storeu_ps(yt + i, silu8(sum));
    }
    if (full < n) {
      const auto count = static_cast<size_t>(n - full);
      __m256 sum = _mm256_setzero_ps();
      for (int64_t j = 0; j < kernel; ++j) {
        float in[8] = {};
        float tap[8] = {};
        std::memcpy(in, row(t + j) + c0 + full, count * sizeof(float));
        std::memcpy(tap, taps + j * n_channels + c0 + full, count * sizeof(float));
        sum = _mm256_fmadd_ps(_mm256_loadu_ps(in), _mm256_loadu_ps(tap), sum);
      }
      float out[8];
      _mm256_storeu_ps(out, silu8(sum));
      std::memcpy(yt + full, out, count * sizeof(float));
    }
  }
}

}  // namespace cellserve::engine::kernels::x86
