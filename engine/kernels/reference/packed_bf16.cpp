// Packed BF16 weights (for tables with vdpbf16ps) and their scalar reference dot product.
//
// Layout (n a multiple of 4): for each quad q of columns 4q .. 4q + 3, the 8 rows' four BF16
// values in row order, row r's at bytes 64q + 8r .. 64q + 8r + 7. One 512-bit load is then one
// quad of all 8 rows: lane 2r holds row r's columns 4q and 4q + 1, lane 2r + 1 its columns 4q + 2
// and 4q + 3, and a 64-bit broadcast of the activation's columns 4q .. 4q + 3 meets every lane
// with its own pair. Each lane accumulates one row: no horizontal sums, unlike the row-major tile.
//
// The arithmetic, vdpbf16ps's: each lane has two accumulators, one for the even quads and one for
// the odd (two independent chains per row, so a single token still keeps the FMA pipes busy).
// A quad adds to its lane the product of the higher column of the pair, then of the lower, each
// product exact in float and each sum rounded to float once (an FMA); input and result denormals
// count as zero. A row's value is (even[2r] + odd[2r]) + (even[2r + 1] + odd[2r + 1]).
#include <cfloat>
#include <cmath>
#include <cstring>

#include "base/half.h"
#include "engine/kernels/kernel_table.h"
#include "engine/kernels/reference/reference_kernels.h"

namespace cellserve::engine::kernels::reference {
namespace {

// vdpbf16ps treats denormal inputs and results as zero.
float flush(float v) { return std::fabs(v) < FLT_MIN ? std::copysign(0.0f, v) : v; }

float bf16_at(const uint8_t* p, int64_t i) {
  uint16_t v;
  std::memcpy(&v, p + 2 * i, sizeof(v));
  return flush(bf16_to_fp32(v));
}

}  // namespace

void pack_bf16(int64_t n, const void* rows, size_t row_stride, void* dst) {
  const auto* src = static_cast<const uint8_t*>(rows);
  auto* out = static_cast<uint8_t*>(dst);
  for (int64_t q = 0; q < n / 4; ++q) {
    for (int r = 0; r < kPackedRows; ++r) std::memcpy(out + 64 * q + 8 * r, src + r * row_stride + 8 * q, 8);
  }
}

void packed_dot_bf16(int64_t n, const void* w, const void* a, size_t a_stride, const int32_t* /*a_sums*/,
                     int64_t /*sums_stride*/, int cols, float* y, int64_t y_stride) {
  const auto* wb = static_cast<const uint8_t*>(w);
  for (int c = 0; c < cols; ++c) {
    const auto* x = static_cast<const uint8_t*>(a) + c * a_stride;
    for (int r = 0; r < kPackedRows; ++r) {
      float acc[2][2] = {};  // [quad parity][lane 2r, lane 2r + 1]
      for (int64_t q = 0; q < n / 4; ++q) {
        const uint8_t* wq = wb + 64 * q + 8 * r;  // row r's columns 4q .. 4q + 3
        for (int h = 0; h < 2; ++h) {
          float& s = acc[q % 2][h];
          const int64_t k = 4 * q + 2 * h;
          s = flush(std::fmaf(bf16_at(wq, 2 * h + 1), bf16_at(x, k + 1), s));
          s = flush(std::fmaf(bf16_at(wq, 2 * h), bf16_at(x, k), s));
        }
      }
      y[c * y_stride + r] = (acc[0][0] + acc[1][0]) + (acc[0][1] + acc[1][1]);
    }
  }
}

}  // namespace cellserve::engine::kernels::reference
