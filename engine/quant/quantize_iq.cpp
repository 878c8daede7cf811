// Reference encoders of IQ4_NL and IQ4_XS: ggml-quants.c's quantize_row_iq4_nl_impl as
// llama-quantize runs it without an importance matrix (weights x^2, ntry = 7).
//
// Note: llama.cpp's quantize_row_iq4_nl_ref calls the same routine with ntry = -1 (no scale
// search); we follow quantize_iq4_nl instead, because that is what produces IQ4_NL files.
// For IQ4_XS, quantize_row_iq4_xs_ref and quantize_iq4_xs agree (ntry = 7).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "engine/quant/kquant_search.h"
#include "engine/quant/quant_internal.h"

namespace cellserve::engine::quant {
namespace {

constexpr int kNtry = 7;

// Index of the codebook level nearest to x (ggml best_index_int8): x picks level j once it
// reaches the midpoint of levels j-1 and j; comparing 2x with their sum keeps it exact.
int best_index(float x) {
  const float x2 = x + x;
  int idx = 0;
  for (int step = 8; step > 0; step >>= 1) {
    const int j = idx + step;
    idx = (x2 >= static_cast<float>(kIq4nlValues[j - 1] + kIq4nlValues[j])) ? j : idx;
  }
  return idx;
}

// Fits one block of 32 to the codebook: returns its scale and the indices in L.
float fit_block(const float* xb, uint8_t* L) {
  float weight[32];
  for (int j = 0; j < 32; ++j) weight[j] = xb[j] * xb[j];
  float amax = 0, max = 0;
  for (int j = 0; j < 32; ++j) {
    const float ax = std::fabs(xb[j]);
    if (ax > amax) {
      amax = ax;
      max = xb[j];
    }
  }
  if (amax < kGroupMaxEps) {
    std::memset(L, 0, 32);
    return 0;
  }
  const float v0 = kIq4nlValues[0];
  float d = -max / v0;  // ntry > 0
  float id = 1 / d;
  float sumqx = 0, sumq2 = 0;
  for (int j = 0; j < 32; ++j) {
    const int l = best_index(id * xb[j]);
    L[j] = static_cast<uint8_t>(l);
    const float q = kIq4nlValues[l];
    sumqx += weight[j] * q * xb[j];
    sumq2 += weight[j] * q * q;
  }
  d = sumq2 > 0 ? sumqx / sumq2 : 0.f;
  float best = d * sumqx;
  for (int itry = -kNtry; itry <= kNtry; ++itry) {
    id = static_cast<float>(itry + kIq4nlValues[0]) / max;
    sumqx = sumq2 = 0;
    for (int j = 0; j < 32; ++j) {
      const float q = kIq4nlValues[best_index(id * xb[j])];
      sumqx += weight[j] * q * xb[j];
      sumq2 += weight[j] * q * q;
    }
    if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
      d = sumqx / sumq2;
      best = d * sumqx;
    }
  }
  return d;
}

// Packs 32 indices per sub-block: byte j holds index j (low nibble) and j + 16 (high).
void pack_nibbles(const uint8_t* L, int n, uint8_t* q4) {
  for (int i = 0; i < n / 32; ++i) {
    for (int j = 0; j < 16; ++j) q4[16 * i + j] = static_cast<uint8_t>(L[32 * i + j] | L[32 * i + 16 + j] << 4);
  }
}

}  // namespace

void quantize_row_iq4_nl(const float* src, void* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK4_NL; ++i) {
    const float* x = src + i * kQK4_NL;
    uint8_t L[kQK4_NL];
    const float scale = fit_block(x, L);
    BlockIQ4_NL b;
    b.d = fp32_to_fp16(scale);
    // Re-pick the indices for the final scale (ggml does this even for a zero scale: id = 0).
    const float id = scale != 0 ? 1 / scale : 0;
    for (int j = 0; j < kQK4_NL; ++j) L[j] = static_cast<uint8_t>(best_index(id * x[j]));
    pack_nibbles(L, kQK4_NL, b.qs);
    store_block(dst, i, b);
  }
}

// IQ4_XS: each sub-block of 32 is fitted as in IQ4_NL, the 8 scales are quantized to 6 bits
// against d = max_scale / -32, and the indices re-picked for the quantized scales.
void quantize_row_iq4_xs(const float* src, void* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const float* x = src + i * kQK_K;
    uint8_t L[kQK_K];
    float scales[kQK_K / 32];
    float max_scale = 0, amax_scale = 0;
    for (int ib = 0; ib < kQK_K / 32; ++ib) {
      scales[ib] = fit_block(x + 32 * ib, L + 32 * ib);
      const float abs_d = std::fabs(scales[ib]);
      if (abs_d > amax_scale) {
        amax_scale = abs_d;
        max_scale = scales[ib];
      }
    }
    BlockIQ4_XS b;
    std::memset(&b, 0, sizeof(b));
    const float d = -max_scale / 32;
    b.d = fp32_to_fp16(d);
    const float id = d != 0 ? 1 / d : 0.f;
    for (int ib = 0; ib < kQK_K / 32; ++ib) {
      int l = std::clamp(nearest_int(id * scales[ib]), -32, 31);
      const float dl = d * static_cast<float>(l);
      const float idl = dl != 0 ? 1 / dl : 0.f;
      for (int j = 0; j < 32; ++j) L[32 * ib + j] = static_cast<uint8_t>(best_index(idl * x[32 * ib + j]));
      l += 32;
      const uint8_t l_l = static_cast<uint8_t>(l & 0xF);
      const uint8_t l_h = static_cast<uint8_t>(l >> 4);
      b.scales_l[ib / 2] = static_cast<uint8_t>(ib % 2 == 0 ? l_l : b.scales_l[ib / 2] | l_l << 4);
      b.scales_h = static_cast<uint16_t>(b.scales_h | l_h << 2 * (ib % 8));
    }
    pack_nibbles(L, kQK_K, b.qs);
    store_block(dst, i, b);
  }
}

}  // namespace cellserve::engine::quant
