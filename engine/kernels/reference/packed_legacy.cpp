// Packed Q4_0 / Q8_0 weights (the layout described at kernel_table.h's kPackedRows) and their
// scalar reference dot products. Packing is a one-time re-layout at load, so every table uses
// these pack functions; the dot products are the specification the SIMD ones must equal.
#include <cmath>
#include <cstring>

#include "base/half.h"
#include "engine/kernels/kernel_table.h"
#include "engine/kernels/reference/reference_kernels.h"
#include "engine/quant/block_types.h"

namespace cellserve::engine::kernels {

void activation_block_sums(const void* a, int64_t n, int32_t* sums) {
  const auto* blocks = static_cast<const uint8_t*>(a);
  for (int64_t b = 0; b < n / 32; ++b) {
    const uint8_t* qs = blocks + b * sizeof(BlockQ8_0) + offsetof(BlockQ8_0, qs);
    int32_t s = 0;
    for (int j = 0; j < 32; ++j) s += static_cast<int8_t>(qs[j]);
    sums[b] = s;
  }
}

namespace reference {
namespace {

// Bytes of one block's quants, and the offset of the packed quants within a packed block group.
template <typename Block>
constexpr size_t kQuantBytes = sizeof(Block) - offsetof(Block, qs);
constexpr size_t kScaleBytes = kPackedRows * sizeof(uint16_t);

template <typename Block>
void pack_rows(int64_t n, const void* rows, size_t row_stride, void* dst) {
  constexpr size_t q = kQuantBytes<Block>;
  static_assert(offsetof(Block, d) == 0 && offsetof(Block, qs) == sizeof(uint16_t) && q % 4 == 0);
  const auto* src = static_cast<const uint8_t*>(rows);
  auto* out = static_cast<uint8_t*>(dst);
  for (int64_t b = 0; b < n / 32; ++b) {
    uint8_t* group = out + b * kPackedRows * sizeof(Block);
    for (int r = 0; r < kPackedRows; ++r) {
      const uint8_t* block = src + r * row_stride + b * sizeof(Block);
      std::memcpy(group + r * sizeof(uint16_t), block, sizeof(uint16_t));
      for (size_t u = 0; u < q / 4; ++u) {
        std::memcpy(group + kScaleBytes + u * 4 * kPackedRows + r * 4, block + offsetof(Block, qs) + 4 * u, 4);
      }
    }
  }
}

// The quant bytes of row r, block `group`, back in the block's own order.
template <typename Block>
void unpack_quants(const uint8_t* group, int r, uint8_t* qs) {
  for (size_t u = 0; u < kQuantBytes<Block> / 4; ++u) {
    std::memcpy(qs + 4 * u, group + kScaleBytes + u * 4 * kPackedRows + r * 4, 4);
  }
}

template <typename Block, typename BlockDot>
void packed_dot(int64_t n, const void* w, const void* a, size_t a_stride, int cols, float* y, int64_t y_stride,
                BlockDot block_dot) {
  const auto* groups = static_cast<const uint8_t*>(w);
  for (int c = 0; c < cols; ++c) {
    const auto* act = static_cast<const uint8_t*>(a) + c * a_stride;
    for (int r = 0; r < kPackedRows; ++r) {
      float acc = 0.0f;
      for (int64_t b = 0; b < n / 32; ++b) {
        const uint8_t* group = groups + b * kPackedRows * sizeof(Block);
        uint16_t dw;
        std::memcpy(&dw, group + r * sizeof(uint16_t), sizeof(dw));
        uint8_t qs[kQuantBytes<Block>];
        unpack_quants<Block>(group, r, qs);
        BlockQ8_0 ab;
        std::memcpy(&ab, act + b * sizeof(BlockQ8_0), sizeof(ab));
        const float scale = fp16_to_fp32(dw) * fp16_to_fp32(ab.d);
        acc = std::fma(static_cast<float>(block_dot(qs, ab.qs)), scale, acc);
      }
      y[c * y_stride + r] = acc;
    }
  }
}

}  // namespace

void pack_q4_0(int64_t n, const void* rows, size_t row_stride, void* dst) {
  pack_rows<BlockQ4_0>(n, rows, row_stride, dst);
}
void pack_q8_0(int64_t n, const void* rows, size_t row_stride, void* dst) {
  pack_rows<BlockQ8_0>(n, rows, row_stride, dst);
}

void packed_dot_q4_0(int64_t n, const void* w, const void* a, size_t a_stride, const int32_t* /*a_sums*/,
                     int64_t /*sums_stride*/, int cols, float* y, int64_t y_stride) {
  packed_dot<BlockQ4_0>(n, w, a, a_stride, cols, y, y_stride, [](const uint8_t* qs, const int8_t* q8) {
    int sum = 0;
    for (int j = 0; j < 16; ++j) sum += ((qs[j] & 0xF) - 8) * q8[j] + ((qs[j] >> 4) - 8) * q8[j + 16];
    return sum;
  });
}

void packed_dot_q8_0(int64_t n, const void* w, const void* a, size_t a_stride, const int32_t* /*a_sums*/,
                     int64_t /*sums_stride*/, int cols, float* y, int64_t y_stride) {
  packed_dot<BlockQ8_0>(n, w, a, a_stride, cols, y, y_stride, [](const uint8_t* qs, const int8_t* q8) {
    int sum = 0;
    for (int j = 0; j < 32; ++j) sum += static_cast<int8_t>(qs[j]) * q8[j];
    return sum;
  });
}

}  // namespace reference
}  // namespace cellserve::engine::kernels
