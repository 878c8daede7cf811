// Packed Q6_K: 8 rows interleaved per super-block of 256, for the packed matmul (kernel_table.h).
// Quants are kept unsigned (q + 32 in [0, 63]) as a nibble plane and a 2-bit plane. A group's
// super-block (kPackedQ6_KBytes, the same as 8 blocks):
//   [0, 16)      d of rows 0..7 (fp16)
//   [16, 144)    scales: sub-blocks 2p and 2p + 1 of row r at 16 + 16 p + 2 r (+1) (int8)
//   [144, 1680)  per sub-block s of 16 elements, 96 bytes at 144 + 96 s: units j < 4 are the
//                elements 4j..4j+3; row r's 4 bytes at 32 (j / 2) + 4 r hold the low 4 bits of unit
//                j in the low (j even) or high (j odd) nibbles, and those at 64 + 4 r hold the top
//                2 bits of unit j at bits 2j, 2j + 1.
// Per row and super-block: acc = fma(float(Σ_s scale_s · (Σ q·a)_s − 32 Σ_s scale_s · Σa_s),
// d · d_a, acc), with q the unsigned quants.
#include <cmath>
#include <cstring>

#include "base/half.h"
#include "engine/kernels/kernel_table.h"
#include "engine/kernels/reference/reference_kernels.h"
#include "engine/quant/block_types.h"

namespace cellserve::engine::kernels::reference {
namespace {

constexpr size_t kScales = 16;
constexpr size_t kQuants = 144;

size_t scale_offset(int s, int r) {
  return kScales + 16 * static_cast<size_t>(s / 2) + 2 * static_cast<size_t>(r) + s % 2;
}
size_t nibble_offset(int s, int j, int r) {
  return kQuants + 96 * static_cast<size_t>(s) + 32 * static_cast<size_t>(j / 2) + 4 * static_cast<size_t>(r);
}
size_t high_offset(int s, int r) { return kQuants + 96 * static_cast<size_t>(s) + 64 + 4 * static_cast<size_t>(r); }

// The unsigned quants (q + 32) of one Q6_K block in element order.
void unpack_q6_k(const BlockQ6_K& x, uint8_t* q) {
  for (int h = 0; h < 2; ++h) {
    const uint8_t* ql = x.ql + 64 * h;
    const uint8_t* qh = x.qh + 32 * h;
    for (int l = 0; l < 32; ++l) {
      q[128 * h + l] = static_cast<uint8_t>((ql[l] & 0xF) | ((qh[l] >> 0) & 3) << 4);
      q[128 * h + l + 32] = static_cast<uint8_t>((ql[l + 32] & 0xF) | ((qh[l] >> 2) & 3) << 4);
      q[128 * h + l + 64] = static_cast<uint8_t>((ql[l] >> 4) | ((qh[l] >> 4) & 3) << 4);
      q[128 * h + l + 96] = static_cast<uint8_t>((ql[l + 32] >> 4) | ((qh[l] >> 6) & 3) << 4);
    }
  }
}

}  // namespace

void pack_q6_k(int64_t n, const void* rows, size_t row_stride, void* dst) {
  const auto* src = static_cast<const uint8_t*>(rows);
  auto* out = static_cast<uint8_t*>(dst);
  for (int64_t b = 0; b < n / 256; ++b) {
    uint8_t* g = out + b * kPackedQ6_KBytes;
    std::memset(g, 0, kPackedQ6_KBytes);
    for (int r = 0; r < kPackedRows; ++r) {
      BlockQ6_K x;
      std::memcpy(&x, src + r * row_stride + b * sizeof(BlockQ6_K), sizeof(x));
      std::memcpy(g + 2 * r, &x.d, 2);
      uint8_t q[256];
      unpack_q6_k(x, q);
      for (int s = 0; s < 16; ++s) {
        g[scale_offset(s, r)] = static_cast<uint8_t>(x.scales[s]);
        for (int e = 0; e < 16; ++e) {
          const int j = e / 4;
          const int byte = e % 4;
          const uint8_t v = q[16 * s + e];
          g[nibble_offset(s, j, r) + byte] |= static_cast<uint8_t>((v & 0xF) << (j % 2 == 0 ? 0 : 4));
          g[high_offset(s, r) + byte] |= static_cast<uint8_t>((v >> 4) << (2 * j));
        }
      }
    }
  }
}

void packed_dot_q6_k(int64_t n, const void* w, const void* a, size_t a_stride, const int32_t* /*a_sums*/,
                     int64_t /*sums_stride*/, int cols, float* y, int64_t y_stride) {
  const auto* groups = static_cast<const uint8_t*>(w);
  for (int c = 0; c < cols; ++c) {
    const auto* act = static_cast<const uint8_t*>(a) + c * a_stride;
    for (int r = 0; r < kPackedRows; ++r) {
      float acc = 0.0f;
      for (int64_t b = 0; b < n / 256; ++b) {
        const uint8_t* g = groups + b * kPackedQ6_KBytes;
        BlockQ8_K ab;
        std::memcpy(&ab, act + b * sizeof(BlockQ8_K), sizeof(ab));
        int32_t isum = 0;
        int32_t correction = 0;
        for (int s = 0; s < 16; ++s) {
          const auto scale = static_cast<int8_t>(g[scale_offset(s, r)]);
          int32_t dot = 0;
          for (int e = 0; e < 16; ++e) {
            const int j = e / 4;
            const uint8_t nib = g[nibble_offset(s, j, r) + e % 4];
            const uint8_t high = g[high_offset(s, r) + e % 4];
            const int q = ((j % 2 == 0 ? nib : nib >> 4) & 0xF) | ((high >> (2 * j)) & 3) << 4;
            dot += q * ab.qs[16 * s + e];
          }
          isum += scale * dot;
          correction += scale * ab.bsums[s];
        }
        uint16_t d;
        std::memcpy(&d, g + 2 * r, 2);
        acc = std::fma(static_cast<float>(isum - 32 * correction), fp16_to_fp32(d) * ab.d, acc);
      }
      y[c * y_stride + r] = acc;
    }
  }
}

}  // namespace cellserve::engine::kernels::reference
