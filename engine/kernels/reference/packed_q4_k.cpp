// Packed Q4_K: 8 rows interleaved per super-block of 256, for the packed matmul (kernel_table.h).
// A group's super-block (kPackedQ4_KBytes):
//   [0, 16)      d of rows 0..7 (fp16)          [16, 32)   dmin of rows 0..7 (fp16)
//   [32, 96)     scale of sub-block s, row r at 32 + 8 s + r (6-bit values in bytes)
//   [96, 160)    min of sub-block s, row r at 96 + 16 (s / 2) + 2 r + s % 2
//   [160, 1184)  nibbles: for pair k < 4 and unit u < 8, row r's bytes qs[32 k + 4 u .. + 3] at
//                160 + 256 k + 32 u + 4 r (low nibbles: elements 64 k + 4 u.., high: 64 k + 32 + 4 u..)
// Per row the float arithmetic of one super-block is: acc = fma(float(Σ_s scale_s · dot_s),
// d · d_a, acc); macc = fma(float(Σ_s min_s · Σa_s), dmin · d_a, macc); the result is acc - macc.
#include <cmath>
#include <cstring>

#include "base/half.h"
#include "engine/kernels/kernel_table.h"
#include "engine/kernels/reference/reference_kernels.h"
#include "engine/quant/block_types.h"
#include "engine/quant/quant_internal.h"

namespace cellserve::engine::kernels::reference {
namespace {

constexpr size_t kScales = 32;
constexpr size_t kMins = 96;
constexpr size_t kNibbles = 160;

size_t min_offset(int s, int r) { return kMins + 16 * static_cast<size_t>(s / 2) + 2 * static_cast<size_t>(r) + s % 2; }
size_t nibble_offset(int k, int u, int r) {
  return kNibbles + 256 * static_cast<size_t>(k) + 32 * static_cast<size_t>(u) + 4 * static_cast<size_t>(r);
}

}  // namespace

void pack_q4_k(int64_t n, const void* rows, size_t row_stride, void* dst) {
  const auto* src = static_cast<const uint8_t*>(rows);
  auto* out = static_cast<uint8_t*>(dst);
  for (int64_t b = 0; b < n / 256; ++b) {
    uint8_t* g = out + b * kPackedQ4_KBytes;
    for (int r = 0; r < kPackedRows; ++r) {
      BlockQ4_K x;
      std::memcpy(&x, src + r * row_stride + b * sizeof(BlockQ4_K), sizeof(x));
      std::memcpy(g + 2 * r, &x.d, 2);
      std::memcpy(g + 16 + 2 * r, &x.dmin, 2);
      for (int s = 0; s < 8; ++s) {
        uint8_t sc = 0;
        uint8_t m = 0;
        quant::get_scale_min_k4(s, x.scales, &sc, &m);
        g[kScales + 8 * s + r] = sc;
        g[min_offset(s, r)] = m;
      }
      for (int k = 0; k < 4; ++k) {
        for (int u = 0; u < 8; ++u) std::memcpy(g + nibble_offset(k, u, r), x.qs + 32 * k + 4 * u, 4);
      }
    }
  }
}

void packed_dot_q4_k(int64_t n, const void* w, const void* a, size_t a_stride, const int32_t* /*a_sums*/,
                     int64_t /*sums_stride*/, int cols, float* y, int64_t y_stride) {
  const auto* groups = static_cast<const uint8_t*>(w);
  for (int c = 0; c < cols; ++c) {
    const auto* act = static_cast<const uint8_t*>(a) + c * a_stride;
    for (int r = 0; r < kPackedRows; ++r) {
      float acc = 0.0f;
      float macc = 0.0f;
      for (int64_t b = 0; b < n / 256; ++b) {
        const uint8_t* g = groups + b * kPackedQ4_KBytes;
        BlockQ8_K ab;
        std::memcpy(&ab, act + b * sizeof(BlockQ8_K), sizeof(ab));
        int32_t isum = 0;
        int32_t msum = 0;
        for (int s = 0; s < 8; ++s) {
          const int k = s / 2;
          const bool high = s % 2 == 1;
          int32_t dot = 0;
          for (int e = 0; e < 32; ++e) {
            const uint8_t byte = g[nibble_offset(k, e / 4, r) + e % 4];
            const int q = high ? byte >> 4 : byte & 0xF;
            dot += q * ab.qs[32 * s + e];
          }
          isum += g[kScales + 8 * s + r] * dot;
          msum += g[min_offset(s, r)] * (ab.bsums[2 * s] + ab.bsums[2 * s + 1]);
        }
        uint16_t d, dmin;
        std::memcpy(&d, g + 2 * r, 2);
        std::memcpy(&dmin, g + 16 + 2 * r, 2);
        acc = std::fma(static_cast<float>(isum), fp16_to_fp32(d) * ab.d, acc);
        macc = std::fma(static_cast<float>(msum), fp16_to_fp32(dmin) * ab.d, macc);
      }
      y[c * y_stride + r] = acc - macc;
    }
  }
}

}  // namespace cellserve::engine::kernels::reference
