// Reference encoders of the k-quants Q2_K, Q3_K, Q4_K, Q5_K, Q6_K and Q8_K: the algorithms
// of llama.cpp's quantize_row_*_ref (ggml-quants.c), which llama-quantize uses when it has no
// importance matrix. Each fits per-sub-block scales (kquant_search.h), quantizes those
// scales against one fp16 super-block scale, then re-quantizes the values with the scales as
// stored, so the levels match what the decoder will see.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "engine/quant/kquant_search.h"
#include "engine/quant/quant_internal.h"

namespace cellserve::engine::quant {
namespace {

// Packs 256 2-bit levels: byte l of each 32-byte group holds l, l+32, l+64, l+96 of its half.
void pack_2bit(const uint8_t* L, uint8_t* qs) {
  for (int j = 0; j < kQK_K; j += 128) {
    for (int l = 0; l < 32; ++l) {
      qs[j / 4 + l] = static_cast<uint8_t>(L[j + l] | L[j + l + 32] << 2 | L[j + l + 64] << 4 | L[j + l + 96] << 6);
    }
  }
}

// Stores the 6-bit scale `ls` and min `lm` of sub-block j (0..7) in Q4_K/Q5_K packing.
// REQUIRES: sub-blocks are stored in order 0..7 into a zero-initialised array.
void pack_scale_min_k4(int j, uint8_t ls, uint8_t lm, uint8_t* scales) {
  if (j < 4) {
    scales[j] = ls;
    scales[j + 4] = lm;
  } else {
    scales[j + 4] = static_cast<uint8_t>((ls & 0xF) | (lm & 0xF) << 4);
    scales[j - 4] |= static_cast<uint8_t>((ls >> 4) << 6);
    scales[j - 0] |= static_cast<uint8_t>((lm >> 4) << 6);
  }
}

// The shared first half of Q4_K and Q5_K: fits the 8 sub-blocks of 32 with make_qkx2_quants
// (weights av_x + |x|), stores the 6-bit scales/mins and d/dmin, and returns the final levels
// in L (re-quantized against the stored scales).
void quantize_scales_k4(const float* x, int nmax, float rmin, float rdelta, int nstep, uint16_t* d_out,
                        uint16_t* dmin_out, uint8_t* scales_out, uint8_t* L) {
  uint8_t Laux[32];
  float weights[32];
  float mins[kQK_K / 32];
  float scales[kQK_K / 32];
  float max_scale = 0;  // as we are deducting the min, scales are always positive
  float max_min = 0;
  for (int j = 0; j < kQK_K / 32; ++j) {
    float sum_x2 = 0;
    for (int l = 0; l < 32; ++l) sum_x2 += x[32 * j + l] * x[32 * j + l];
    const float av_x = std::sqrt(sum_x2 / 32);
    for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(x[32 * j + l]);
    scales[j] = make_qkx2_quants(32, nmax, x + 32 * j, weights, L + 32 * j, &mins[j], Laux, rmin, rdelta, nstep, false);
    if (scales[j] > max_scale) max_scale = scales[j];
    if (mins[j] > max_min) max_min = mins[j];
  }
  const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
  const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
  std::memset(scales_out, 0, kKScaleSize);
  for (int j = 0; j < kQK_K / 32; ++j) {
    const uint8_t ls = std::min<uint8_t>(63, static_cast<uint8_t>(nearest_int(inv_scale * scales[j])));
    const uint8_t lm = std::min<uint8_t>(63, static_cast<uint8_t>(nearest_int(inv_min * mins[j])));
    pack_scale_min_k4(j, ls, lm, scales_out);
  }
  *d_out = fp32_to_fp16(max_scale / 63.f);
  *dmin_out = fp32_to_fp16(max_min / 63.f);
  for (int j = 0; j < kQK_K / 32; ++j) {
    uint8_t sc, m;
    get_scale_min_k4(j, scales_out, &sc, &m);
    const float d = fp16_to_fp32(*d_out) * sc;
    if (d == 0) continue;
    const float dm = fp16_to_fp32(*dmin_out) * m;
    for (int ii = 0; ii < 32; ++ii) {
      L[32 * j + ii] = static_cast<uint8_t>(std::clamp(nearest_int((x[32 * j + ii] + dm) / d), 0, nmax));
    }
  }
}

}  // namespace

// Q2_K: 16 sub-blocks of 16 fitted with make_qkx2_quants (weights |x|, mean absolute error),
// 4-bit scales and mins against d = max_scale/15, dmin = max_min/15.
void quantize_row_q2_k(const float* src, void* dst, int64_t n) {
  constexpr float q4scale = 15.f;
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const float* x = src + i * kQK_K;
    uint8_t L[kQK_K];
    uint8_t Laux[16];
    float weights[16];
    float mins[kQK_K / 16];
    float scales[kQK_K / 16];
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < kQK_K / 16; ++j) {
      for (int l = 0; l < 16; ++l) weights[l] = std::fabs(x[16 * j + l]);
      scales[j] = make_qkx2_quants(16, 3, x + 16 * j, weights, L + 16 * j, &mins[j], Laux, -0.5f, 0.1f, 15, true);
      if (scales[j] > max_scale) max_scale = scales[j];
      if (mins[j] > max_min) max_min = mins[j];
    }
    BlockQ2_K b;
    if (max_scale > 0) {
      const float iscale = q4scale / max_scale;
      for (int j = 0; j < kQK_K / 16; ++j) b.scales[j] = static_cast<uint8_t>(nearest_int(iscale * scales[j]));
      b.d = fp32_to_fp16(max_scale / q4scale);
    } else {
      std::memset(b.scales, 0, sizeof(b.scales));
      b.d = fp32_to_fp16(0.f);
    }
    if (max_min > 0) {
      const float iscale = q4scale / max_min;
      for (int j = 0; j < kQK_K / 16; ++j) {
        b.scales[j] = static_cast<uint8_t>(b.scales[j] | nearest_int(iscale * mins[j]) << 4);
      }
      b.dmin = fp32_to_fp16(max_min / q4scale);
    } else {
      b.dmin = fp32_to_fp16(0.f);
    }
    for (int j = 0; j < kQK_K / 16; ++j) {
      const float d = fp16_to_fp32(b.d) * static_cast<float>(b.scales[j] & 0xF);
      if (d == 0) continue;
      const float dm = fp16_to_fp32(b.dmin) * static_cast<float>(b.scales[j] >> 4);
      for (int ii = 0; ii < 16; ++ii) {
        L[16 * j + ii] = static_cast<uint8_t>(std::clamp(nearest_int((x[16 * j + ii] + dm) / d), 0, 3));
      }
    }
    pack_2bit(L, b.qs);
    store_block(dst, i, b);
  }
}

// Q3_K: 16 sub-blocks of 16 fitted with make_q3_quants, 6-bit signed scales against
// d = max_scale / -32, then 3-bit levels split into hmask (bit 2) and qs (bits 0-1).
void quantize_row_q3_k(const float* src, void* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const float* x = src + i * kQK_K;
    int8_t L[kQK_K];
    float scales[kQK_K / 16];
    float max_scale = 0, amax = 0;
    for (int j = 0; j < kQK_K / 16; ++j) {
      scales[j] = make_q3_quants(16, 4, x + 16 * j, L + 16 * j, true);
      const float scale = std::fabs(scales[j]);
      if (scale > amax) {
        amax = scale;
        max_scale = scales[j];
      }
    }
    BlockQ3_K b;
    std::memset(b.scales, 0, sizeof(b.scales));
    if (max_scale != 0) {
      const float iscale = -32.f / max_scale;
      for (int j = 0; j < kQK_K / 16; ++j) {
        int8_t l = static_cast<int8_t>(nearest_int(iscale * scales[j]));
        l = static_cast<int8_t>(std::clamp<int>(l, -32, 31) + 32);
        if (j < 8) {
          b.scales[j] = l & 0xF;
        } else {
          b.scales[j - 8] = static_cast<uint8_t>(b.scales[j - 8] | (l & 0xF) << 4);
        }
        l = static_cast<int8_t>(l >> 4);
        b.scales[j % 4 + 8] = static_cast<uint8_t>(b.scales[j % 4 + 8] | l << (2 * (j / 4)));
      }
      b.d = fp32_to_fp16(1 / iscale);
    } else {
      b.d = fp32_to_fp16(0.f);
    }
    for (int j = 0; j < kQK_K / 16; ++j) {
      const int low = j < 8 ? b.scales[j] & 0xF : b.scales[j - 8] >> 4;
      const int sc = (low | ((b.scales[8 + j % 4] >> (2 * (j / 4))) & 3) << 4) - 32;
      const float d = fp16_to_fp32(b.d) * static_cast<float>(sc);
      if (d == 0) continue;
      for (int ii = 0; ii < 16; ++ii) {
        L[16 * j + ii] = static_cast<int8_t>(std::clamp(nearest_int(x[16 * j + ii] / d), -4, 3) + 4);
      }
    }
    // The high bit of the first 32 quants goes into bit 0 of hmask[0..31], the next 32 into bit 1...
    std::memset(b.hmask, 0, sizeof(b.hmask));
    uint8_t L2[kQK_K];
    for (int j = 0; j < kQK_K; ++j) {
      int l = L[j];
      if (l > 3) {
        b.hmask[j % 32] = static_cast<uint8_t>(b.hmask[j % 32] | 1 << (j / 32));
        l -= 4;
      }
      L2[j] = static_cast<uint8_t>(l);
    }
    pack_2bit(L2, b.qs);
    store_block(dst, i, b);
  }
}

// Q4_K: 8 sub-blocks of 32 fitted with make_qkx2_quants(nmax 15, rmin -1, rdelta 0.1, 20 steps).
void quantize_row_q4_k(const float* src, void* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const float* x = src + i * kQK_K;
    uint8_t L[kQK_K];
    BlockQ4_K b;
    quantize_scales_k4(x, 15, -1.f, 0.1f, 20, &b.d, &b.dmin, b.scales, L);
    uint8_t* q = b.qs;
    for (int j = 0; j < kQK_K; j += 64) {
      for (int l = 0; l < 32; ++l) q[l] = static_cast<uint8_t>(L[j + l] | L[j + l + 32] << 4);
      q += 32;
    }
    store_block(dst, i, b);
  }
}

// Q5_K: as Q4_K with nmax 31 and make_qkx2_quants(rmin -0.5, rdelta 0.1, 15 steps).
void quantize_row_q5_k(const float* src, void* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const float* x = src + i * kQK_K;
    uint8_t L[kQK_K];
    BlockQ5_K b;
    quantize_scales_k4(x, 31, -0.5f, 0.1f, 15, &b.d, &b.dmin, b.scales, L);
    std::memset(b.qh, 0, sizeof(b.qh));
    uint8_t* ql = b.qs;
    unsigned m1 = 1, m2 = 2;
    for (int c = 0; c < kQK_K; c += 64) {
      for (int j = 0; j < 32; ++j) {
        int l1 = L[c + j];
        if (l1 > 15) {
          l1 -= 16;
          b.qh[j] = static_cast<uint8_t>(b.qh[j] | m1);
        }
        int l2 = L[c + j + 32];
        if (l2 > 15) {
          l2 -= 16;
          b.qh[j] = static_cast<uint8_t>(b.qh[j] | m2);
        }
        ql[j] = static_cast<uint8_t>(l1 | l2 << 4);
      }
      m1 <<= 2;
      m2 <<= 2;
      ql += 32;
    }
    store_block(dst, i, b);
  }
}

// Q6_K: 16 sub-blocks of 16 fitted with make_qx_quants(nmax 32, weights x^2), 8-bit signed
// scales against d = max_scale / -128.
void quantize_row_q6_k(const float* src, void* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const float* x = src + i * kQK_K;
    int8_t L[kQK_K];
    float scales[kQK_K / 16];
    float max_scale = 0, max_abs_scale = 0;
    for (int ib = 0; ib < kQK_K / 16; ++ib) {
      const float scale = make_qx_quants(16, 32, x + 16 * ib, L + 16 * ib, 1, nullptr);
      scales[ib] = scale;
      const float abs_scale = std::fabs(scale);
      if (abs_scale > max_abs_scale) {
        max_abs_scale = abs_scale;
        max_scale = scale;
      }
    }
    BlockQ6_K b;
    if (max_abs_scale < kGroupMaxEps) {
      std::memset(&b, 0, sizeof(b));
      store_block(dst, i, b);
      continue;
    }
    const float iscale = -128.f / max_scale;
    b.d = fp32_to_fp16(1 / iscale);
    for (int ib = 0; ib < kQK_K / 16; ++ib) {
      b.scales[ib] = static_cast<int8_t>(std::min(127, nearest_int(iscale * scales[ib])));
    }
    for (int j = 0; j < kQK_K / 16; ++j) {
      const float d = fp16_to_fp32(b.d) * static_cast<float>(b.scales[j]);
      if (d == 0) continue;
      for (int ii = 0; ii < 16; ++ii) {
        L[16 * j + ii] = static_cast<int8_t>(std::clamp(nearest_int(x[16 * j + ii] / d), -32, 31) + 32);
      }
    }
    uint8_t* ql = b.ql;
    uint8_t* qh = b.qh;
    for (int j = 0; j < kQK_K; j += 128) {
      for (int l = 0; l < 32; ++l) {
        const int q1 = L[j + l + 0] & 0xF;
        const int q2 = L[j + l + 32] & 0xF;
        const int q3 = L[j + l + 64] & 0xF;
        const int q4 = L[j + l + 96] & 0xF;
        ql[l + 0] = static_cast<uint8_t>(q1 | q3 << 4);
        ql[l + 32] = static_cast<uint8_t>(q2 | q4 << 4);
        qh[l] = static_cast<uint8_t>((L[j + l] >> 4) | (L[j + l + 32] >> 4) << 2 | (L[j + l + 64] >> 4) << 4 |
                                     (L[j + l + 96] >> 4) << 6);
      }
      ql += 64;
      qh += 32;
    }
    store_block(dst, i, b);
  }
}

// Q8_K: q = nearest_int(-127/max * x) with the signed extreme max, fp32 d, and group sums.
void quantize_row_q8_k(const float* src, void* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const float* x = src + i * kQK_K;
    BlockQ8_K b;
    float max = 0, amax = 0;
    for (int j = 0; j < kQK_K; ++j) {
      const float ax = std::fabs(x[j]);
      if (ax > amax) {
        amax = ax;
        max = x[j];
      }
    }
    if (amax == 0) {
      std::memset(&b, 0, sizeof(b));
      store_block(dst, i, b);
      continue;
    }
    const float iscale = -127.f / max;
    for (int j = 0; j < kQK_K; ++j) b.qs[j] = static_cast<int8_t>(std::min(127, nearest_int(iscale * x[j])));
    for (int j = 0; j < kQK_K / 16; ++j) {
      int sum = 0;
      for (int ii = 0; ii < 16; ++ii) sum += b.qs[j * 16 + ii];
      b.bsums[j] = static_cast<int16_t>(sum);
    }
    b.d = 1 / iscale;
    store_block(dst, i, b);
  }
}

}  // namespace cellserve::engine::quant
