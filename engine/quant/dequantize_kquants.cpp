// Reference decoders of the k-quants Q2_K, Q3_K, Q4_K, Q5_K, Q6_K and Q8_K: bit-exact with
// llama.cpp's dequantize_row_* in ggml-quants.c. Layouts are described in block_types.h.
#include "engine/quant/quant_internal.h"

namespace cellserve::engine::quant {

void dequantize_row_q2_k(const void* src, float* dst, int64_t n) {
  float* y = dst;
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const auto b = load_block<BlockQ2_K>(src, i);
    const float d = fp16_to_fp32(b.d);
    const float min = fp16_to_fp32(b.dmin);
    const uint8_t* q = b.qs;
    int is = 0;
    for (int half = 0; half < kQK_K; half += 128) {
      for (int shift = 0; shift < 8; shift += 2) {
        // Two sub-blocks of 16 share each bit pair: q[0..15] and q[16..31].
        for (int part = 0; part < 2; ++part) {
          const uint8_t sc = b.scales[is++];
          const float dl = d * static_cast<float>(sc & 0xF);
          const float ml = min * static_cast<float>(sc >> 4);
          for (int l = 0; l < 16; ++l) {
            *y++ = dl * static_cast<float>((q[l + 16 * part] >> shift) & 3) - ml;
          }
        }
      }
      q += 32;
    }
  }
}

namespace {

// Unpacks the 16 6-bit Q3_K scales (still biased by 32) from their 12-byte packing.
void unpack_q3_k_scales(const uint8_t packed[12], int8_t out[16]) {
  for (int j = 0; j < 16; ++j) {
    const int low = j < 8 ? packed[j] & 0xF : packed[j - 8] >> 4;
    const int high = (packed[8 + j % 4] >> (2 * (j / 4))) & 3;
    out[j] = static_cast<int8_t>(low | high << 4);
  }
}

}  // namespace

void dequantize_row_q3_k(const void* src, float* dst, int64_t n) {
  float* y = dst;
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const auto b = load_block<BlockQ3_K>(src, i);
    const float d_all = fp16_to_fp32(b.d);
    int8_t scales[16];
    unpack_q3_k_scales(b.scales, scales);
    const uint8_t* q = b.qs;
    uint8_t m = 1;  // hmask bit of the current 32-element group
    int is = 0;
    for (int half = 0; half < kQK_K; half += 128) {
      for (int shift = 0; shift < 8; shift += 2) {
        for (int part = 0; part < 2; ++part) {
          const float dl = d_all * static_cast<float>(scales[is++] - 32);
          for (int l = 0; l < 16; ++l) {
            const int low = (q[l + 16 * part] >> shift) & 3;
            const int high = (b.hmask[l + 16 * part] & m) ? 0 : 4;
            *y++ = dl * static_cast<float>(low - high);
          }
        }
        m = static_cast<uint8_t>(m << 1);
      }
      q += 32;
    }
  }
}

void dequantize_row_q4_k(const void* src, float* dst, int64_t n) {
  float* y = dst;
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const auto b = load_block<BlockQ4_K>(src, i);
    const float d = fp16_to_fp32(b.d);
    const float min = fp16_to_fp32(b.dmin);
    const uint8_t* q = b.qs;
    int is = 0;
    for (int j = 0; j < kQK_K; j += 64) {
      uint8_t sc, m;
      get_scale_min_k4(is + 0, b.scales, &sc, &m);
      const float d1 = d * sc, m1 = min * m;
      get_scale_min_k4(is + 1, b.scales, &sc, &m);
      const float d2 = d * sc, m2 = min * m;
      for (int l = 0; l < 32; ++l) *y++ = d1 * static_cast<float>(q[l] & 0xF) - m1;
      for (int l = 0; l < 32; ++l) *y++ = d2 * static_cast<float>(q[l] >> 4) - m2;
      q += 32;
      is += 2;
    }
  }
}

void dequantize_row_q5_k(const void* src, float* dst, int64_t n) {
  float* y = dst;
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const auto b = load_block<BlockQ5_K>(src, i);
    const float d = fp16_to_fp32(b.d);
    const float min = fp16_to_fp32(b.dmin);
    const uint8_t* ql = b.qs;
    int is = 0;
    unsigned u1 = 1, u2 = 2;
    for (int j = 0; j < kQK_K; j += 64) {
      uint8_t sc, m;
      get_scale_min_k4(is + 0, b.scales, &sc, &m);
      const float d1 = d * sc, m1 = min * m;
      get_scale_min_k4(is + 1, b.scales, &sc, &m);
      const float d2 = d * sc, m2 = min * m;
      for (int l = 0; l < 32; ++l) {
        *y++ = d1 * static_cast<float>((ql[l] & 0xF) + (b.qh[l] & u1 ? 16 : 0)) - m1;
      }
      for (int l = 0; l < 32; ++l) {
        *y++ = d2 * static_cast<float>((ql[l] >> 4) + (b.qh[l] & u2 ? 16 : 0)) - m2;
      }
      ql += 32;
      is += 2;
      u1 <<= 2;
      u2 <<= 2;
    }
  }
}

void dequantize_row_q6_k(const void* src, float* dst, int64_t n) {
  float* y = dst;
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const auto b = load_block<BlockQ6_K>(src, i);
    const float d = fp16_to_fp32(b.d);
    const uint8_t* ql = b.ql;
    const uint8_t* qh = b.qh;
    const int8_t* sc = b.scales;
    for (int half = 0; half < kQK_K; half += 128) {
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = ((ql[l + 0] & 0xF) | ((qh[l] >> 0) & 3) << 4) - 32;
        const int q2 = ((ql[l + 32] & 0xF) | ((qh[l] >> 2) & 3) << 4) - 32;
        const int q3 = ((ql[l + 0] >> 4) | ((qh[l] >> 4) & 3) << 4) - 32;
        const int q4 = ((ql[l + 32] >> 4) | ((qh[l] >> 6) & 3) << 4) - 32;
        // ggml multiplies d * scale first, then the quant: keep that order for bit-exactness.
        y[l + 0] = d * static_cast<float>(sc[is + 0]) * static_cast<float>(q1);
        y[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
        y[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
        y[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
      }
      y += 128;
      ql += 64;
      qh += 32;
      sc += 8;
    }
  }
}

void dequantize_row_q8_k(const void* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const auto b = load_block<BlockQ8_K>(src, i);
    for (int j = 0; j < kQK_K; ++j) dst[i * kQK_K + j] = b.d * static_cast<float>(b.qs[j]);
  }
}

}  // namespace cellserve::engine::quant
