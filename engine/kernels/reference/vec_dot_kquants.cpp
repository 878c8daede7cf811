// Scalar reference dot products for the super-block types (Q2_K..Q6_K, IQ4_XS) against Q8_K
// activations. Each weight super-block is unpacked to integer quants and integer sub-block
// scales; the products are summed exactly in integers and scaled once per super-block by
// d_weight * d_activation, as ggml's generic kernels do.
#include "base/half.h"
#include "engine/kernels/reference/reference_kernels.h"
#include "engine/quant/block_types.h"
#include "engine/quant/quant_internal.h"

namespace cellserve::engine::kernels::reference {
namespace {

using quant::get_scale_min_k4;
using quant::kIq4nlValues;
using quant::load_block;

// Σ_sub scale[sub] * Σ_{l in sub} q[l] * y[l], with sub-blocks of `sub_size` elements.
int32_t scaled_dot(const int8_t* q, const int8_t* y, const int* scales, int sub_size) {
  int32_t total = 0;
  for (int s = 0; s < 256 / sub_size; ++s) {
    int32_t sum = 0;
    for (int l = 0; l < sub_size; ++l) sum += q[s * sub_size + l] * y[s * sub_size + l];
    total += scales[s] * sum;
  }
  return total;
}

// Unpacks Q4_K / Q5_K quants (without the 5th bit when qh is null) in element order.
void unpack_q45_k(const uint8_t* qs, const uint8_t* qh, int8_t* q) {
  for (int c = 0; c < 4; ++c) {
    for (int l = 0; l < 32; ++l) {
      int lo = qs[32 * c + l] & 0xF;
      int hi = qs[32 * c + l] >> 4;
      if (qh != nullptr) {
        lo |= ((qh[l] >> (2 * c)) & 1) << 4;
        hi |= ((qh[l] >> (2 * c + 1)) & 1) << 4;
      }
      q[64 * c + l] = static_cast<int8_t>(lo);
      q[64 * c + 32 + l] = static_cast<int8_t>(hi);
    }
  }
}

// Σ over sub-blocks of 32 of min[j] * Σ y (from the activation's 16-element sums).
int32_t mins_dot(const int* mins, const int16_t* bsums) {
  int32_t total = 0;
  for (int j = 0; j < 8; ++j) total += mins[j] * (bsums[2 * j] + bsums[2 * j + 1]);
  return total;
}

template <typename Block>
float dot_q45_k(int64_t n, const void* w, const void* a) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n / 256; ++i) {
    const auto x = load_block<Block>(w, i);
    const auto y = load_block<BlockQ8_K>(a, i);
    int8_t q[256];
    if constexpr (std::is_same_v<Block, BlockQ5_K>)
      unpack_q45_k(x.qs, x.qh, q);
    else
      unpack_q45_k(x.qs, nullptr, q);
    int scales[8];
    int mins[8];
    for (int j = 0; j < 8; ++j) {
      uint8_t sc = 0;
      uint8_t m = 0;
      get_scale_min_k4(j, x.scales, &sc, &m);
      scales[j] = sc;
      mins[j] = m;
    }
    const float d = fp16_to_fp32(x.d) * y.d;
    const float dmin = fp16_to_fp32(x.dmin) * y.d;
    sum += d * static_cast<float>(scaled_dot(q, y.qs, scales, 32)) - dmin * static_cast<float>(mins_dot(mins, y.bsums));
  }
  return sum;
}

}  // namespace

float vec_dot_q4_k(int64_t n, const void* w, const void* a) { return dot_q45_k<BlockQ4_K>(n, w, a); }
float vec_dot_q5_k(int64_t n, const void* w, const void* a) { return dot_q45_k<BlockQ5_K>(n, w, a); }

float vec_dot_q6_k(int64_t n, const void* w, const void* a) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n / 256; ++i) {
    const auto x = load_block<BlockQ6_K>(w, i);
    const auto y = load_block<BlockQ8_K>(a, i);
    int8_t q[256];
    for (int h = 0; h < 2; ++h) {
      const uint8_t* ql = x.ql + 64 * h;
      const uint8_t* qh = x.qh + 32 * h;
      for (int l = 0; l < 32; ++l) {
        q[128 * h + l] = static_cast<int8_t>(((ql[l] & 0xF) | ((qh[l] >> 0) & 3) << 4) - 32);
        q[128 * h + l + 32] = static_cast<int8_t>(((ql[l + 32] & 0xF) | ((qh[l] >> 2) & 3) << 4) - 32);
        q[128 * h + l + 64] = static_cast<int8_t>(((ql[l] >> 4) | ((qh[l] >> 4) & 3) << 4) - 32);
        q[128 * h + l + 96] = static_cast<int8_t>(((ql[l + 32] >> 4) | ((qh[l] >> 6) & 3) << 4) - 32);
      }
    }
    int scales[16];
    for (int j = 0; j < 16; ++j) scales[j] = x.scales[j];
    sum += fp16_to_fp32(x.d) * y.d * static_cast<float>(scaled_dot(q, y.qs, scales, 16));
  }
  return sum;
}

float vec_dot_q3_k(int64_t n, const void* w, const void* a) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n / 256; ++i) {
    const auto x = load_block<BlockQ3_K>(w, i);
    const auto y = load_block<BlockQ8_K>(a, i);
    int8_t q[256];
    for (int e = 0; e < 256; ++e) {
      const int h = e / 128;
      const int k = (e % 128) / 32;
      const int l = e % 32;
      const int low = (x.qs[32 * h + l] >> (2 * k)) & 3;
      const bool high = (x.hmask[l] >> (e / 32)) & 1;
      q[e] = static_cast<int8_t>(low - (high ? 0 : 4));
    }
    int scales[16];
    for (int j = 0; j < 16; ++j) {
      const int low = j < 8 ? (x.scales[j] & 0xF) : (x.scales[j - 8] >> 4);
      const int high = (x.scales[8 + j % 4] >> (2 * (j / 4))) & 3;
      scales[j] = (low | high << 4) - 32;
    }
    sum += fp16_to_fp32(x.d) * y.d * static_cast<float>(scaled_dot(q, y.qs, scales, 16));
  }
  return sum;
}

float vec_dot_q2_k(int64_t n, const void* w, const void* a) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n / 256; ++i) {
    const auto x = load_block<BlockQ2_K>(w, i);
    const auto y = load_block<BlockQ8_K>(a, i);
    int8_t q[256];
    for (int e = 0; e < 256; ++e) {
      const int h = e / 128;
      const int k = (e % 128) / 32;
      q[e] = static_cast<int8_t>((x.qs[32 * h + e % 32] >> (2 * k)) & 3);
    }
    int scales[16];
    int32_t min_sum = 0;
    for (int j = 0; j < 16; ++j) {
      scales[j] = x.scales[j] & 0xF;
      min_sum += (x.scales[j] >> 4) * y.bsums[j];
    }
    const float d = fp16_to_fp32(x.d) * y.d;
    const float dmin = fp16_to_fp32(x.dmin) * y.d;
    sum += d * static_cast<float>(scaled_dot(q, y.qs, scales, 16)) - dmin * static_cast<float>(min_sum);
  }
  return sum;
}

float vec_dot_iq4_xs(int64_t n, const void* w, const void* a) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n / 256; ++i) {
    const auto x = load_block<BlockIQ4_XS>(w, i);
    const auto y = load_block<BlockQ8_K>(a, i);
    int8_t q[256];
    int scales[8];
    for (int s = 0; s < 8; ++s) {
      const uint8_t* qs = x.qs + 16 * s;
      for (int j = 0; j < 16; ++j) {
        q[32 * s + j] = kIq4nlValues[qs[j] & 0xF];
        q[32 * s + j + 16] = kIq4nlValues[qs[j] >> 4];
      }
      scales[s] = (((x.scales_l[s / 2] >> (4 * (s % 2))) & 0xF) | ((x.scales_h >> (2 * s)) & 3) << 4) - 32;
    }
    sum += fp16_to_fp32(x.d) * y.d * static_cast<float>(scaled_dot(q, y.qs, scales, 32));
  }
  return sum;
}

}  // namespace cellserve::engine::kernels::reference
