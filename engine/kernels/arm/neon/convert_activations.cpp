// NEON activation converters, bit-identical to the reference: the same float operations in the
// same order per element (x * (127 / amax), round half to even with vcvtnq_s32_f32), and the same
// fp16/bf16 rounding (FCVTN rounds to nearest even; bf16 by integer round-to-nearest-even).
#include <arm_neon.h>

#include <cstring>

#include "engine/kernels/arm/neon/legacy_kernels.h"
#include "engine/quant/block_types.h"

namespace cellserve::engine::kernels::arm {
namespace {

uint16_t float_to_half(float f) {
  const __fp16 h = static_cast<__fp16>(f);  // FCVT, round to nearest even
  uint16_t bits;
  std::memcpy(&bits, &h, sizeof(bits));
  return bits;
}

// max |x| over a block; FMAXNM ignores NaNs as the reference's fmax / `>` comparisons do.
float block_amax(const float* x, int len) {
  float32x4_t m = vdupq_n_f32(0.0f);
  for (int j = 0; j < len; j += 4) m = vmaxnmq_f32(m, vabsq_f32(vld1q_f32(x + j)));
  return vmaxnmvq_f32(m);
}

// One block of 32: writes the int8 quants, returns the scale amax/127 and (via sum) sum(q).
float quantize_block_32(const float* x, int8_t* q, int* sum) {
  const float amax = block_amax(x, 32);
  const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
  int16x8_t total = vdupq_n_s16(0);
  for (int j = 0; j < 32; j += 16) {
    int32x4_t v[4];
    for (int k = 0; k < 4; ++k) v[k] = vcvtnq_s32_f32(vmulq_n_f32(vld1q_f32(x + j + 4 * k), id));
    const int16x8_t lo = vcombine_s16(vmovn_s32(v[0]), vmovn_s32(v[1]));
    const int16x8_t hi = vcombine_s16(vmovn_s32(v[2]), vmovn_s32(v[3]));
    total = vaddq_s16(total, vaddq_s16(lo, hi));
    vst1q_s8(q + j, vcombine_s8(vmovn_s16(lo), vmovn_s16(hi)));
  }
  *sum = vaddlvq_s16(total);
  return amax / 127.0f;
}

}  // namespace

void from_float_f16_neon(const float* src, void* dst, int64_t n) {
  auto* y = static_cast<uint8_t*>(dst);
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const float16x4_t h = vcvt_f16_f32(vld1q_f32(src + i));
    vst1_u8(y + 2 * i, vreinterpret_u8_f16(h));
  }
  for (; i < n; ++i) {
    const uint16_t h = float_to_half(src[i]);
    std::memcpy(y + 2 * i, &h, sizeof(h));
  }
}

void from_float_bf16_neon(const float* src, void* dst, int64_t n) {
  auto* y = static_cast<uint8_t*>(dst);
  int64_t i = 0;
  const uint32x4_t abs_mask = vdupq_n_u32(0x7fffffffu);
  const uint32x4_t inf = vdupq_n_u32(0x7f800000u);
  for (; i + 4 <= n; i += 4) {
    const uint32x4_t x = vreinterpretq_u32_f32(vld1q_f32(src + i));
    // Round to nearest even: add 0x7fff plus the lowest kept bit; NaNs keep their top bits, quieted.
    const uint32x4_t odd = vandq_u32(vshrq_n_u32(x, 16), vdupq_n_u32(1));
    const uint32x4_t rounded = vshrq_n_u32(vaddq_u32(x, vaddq_u32(vdupq_n_u32(0x7fffu), odd)), 16);
    const uint32x4_t nan = vorrq_u32(vshrq_n_u32(x, 16), vdupq_n_u32(64));
    const uint32x4_t is_nan = vcgtq_u32(vandq_u32(x, abs_mask), inf);
    vst1_u8(y + 2 * i, vreinterpret_u8_u16(vmovn_u32(vbslq_u32(is_nan, nan, rounded))));
  }
  for (; i < n; ++i) {
    uint32_t x;
    std::memcpy(&x, src + i, sizeof(x));
    const uint16_t b = (x & 0x7fffffffu) > 0x7f800000u ? static_cast<uint16_t>((x >> 16) | 64)
                                                       : static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
    std::memcpy(y + 2 * i, &b, sizeof(b));
  }
}

void from_float_q8_0_neon(const float* src, void* dst, int64_t n) {
  auto* y = static_cast<uint8_t*>(dst);
  for (int64_t i = 0; i < n / 32; ++i) {
    uint8_t* block = y + i * sizeof(BlockQ8_0);
    int sum = 0;
    const uint16_t d = float_to_half(quantize_block_32(src + i * 32, reinterpret_cast<int8_t*>(block + 2), &sum));
    std::memcpy(block, &d, sizeof(d));
  }
}

void from_float_q8_1_neon(const float* src, void* dst, int64_t n) {
  auto* y = static_cast<uint8_t*>(dst);
  for (int64_t i = 0; i < n / 32; ++i) {
    uint8_t* block = y + i * sizeof(BlockQ8_1);
    int sum = 0;
    const float d = quantize_block_32(src + i * 32, reinterpret_cast<int8_t*>(block + offsetof(BlockQ8_1, qs)), &sum);
    const uint16_t dh = float_to_half(d);
    const uint16_t sh = float_to_half(d * static_cast<float>(sum));
    std::memcpy(block + offsetof(BlockQ8_1, d), &dh, sizeof(dh));
    std::memcpy(block + offsetof(BlockQ8_1, s), &sh, sizeof(sh));
  }
}

void from_float_q8_k_neon(const float* src, void* dst, int64_t n) {
  auto* y = static_cast<uint8_t*>(dst);
  for (int64_t i = 0; i < n / 256; ++i) {
    const float* x = src + i * 256;
    uint8_t* block = y + i * sizeof(BlockQ8_K);
    const float amax = block_amax(x, 256);
    if (amax == 0.0f) {
      std::memset(block, 0, sizeof(BlockQ8_K));
      continue;
    }
    // The reference takes the first element of largest magnitude, with its sign.
    int first = 0;
    while (first < 255 && __builtin_fabsf(x[first]) != amax) ++first;
    const float iscale = -127.0f / x[first];
    int8_t* qs = reinterpret_cast<int8_t*>(block + offsetof(BlockQ8_K, qs));
    int16_t bsums[16];
    for (int j = 0; j < 256; j += 16) {
      int32x4_t v[4];
      for (int k = 0; k < 4; ++k) {
        v[k] = vminq_s32(vcvtnq_s32_f32(vmulq_n_f32(vld1q_f32(x + j + 4 * k), iscale)), vdupq_n_s32(127));
      }
      const int16x8_t lo = vcombine_s16(vmovn_s32(v[0]), vmovn_s32(v[1]));
      const int16x8_t hi = vcombine_s16(vmovn_s32(v[2]), vmovn_s32(v[3]));
      bsums[j / 16] = static_cast<int16_t>(vaddvq_s16(vaddq_s16(lo, hi)));
      vst1q_s8(qs + j, vcombine_s8(vmovn_s16(lo), vmovn_s16(hi)));
    }
    std::memcpy(block + offsetof(BlockQ8_K, bsums), bsums, sizeof(bsums));
    const float d = 1.0f / iscale;
    std::memcpy(block + offsetof(BlockQ8_K, d), &d, sizeof(d));
  }
}

}  // namespace cellserve::engine::kernels::arm
