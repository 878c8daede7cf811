// Pieces shared by the dotprod and i8mm kernels of the legacy family (vec_dot, SDOT and SMMLA
// tiles): the SDOT block product, the weight unpackers and a compile-time loop. Everything here
// has internal linkage, so each file gets its own copy compiled with its own flags.
#pragma once

#include <arm_neon.h>

#include <cstddef>
#include <cstdint>

#include "engine/kernels/arm/neon/legacy_unpack.h"
#include "engine/quant/block_types.h"

namespace cellserve::engine::kernels::arm {

static inline int32x4_t sdot_block(int8x16x2_t x, int8x16x2_t y) {
  return vdotq_s32(vdotq_s32(vdupq_n_s32(0), x.val[0], y.val[0]), x.val[1], y.val[1]);
}

// acc += float(lane sums) * d, fused, lane by lane (the Q4_1 / Q5_1 dot products).
static inline float32x4_t scale_accumulate(float32x4_t acc, int32x4_t sums, float d) {
  return vfmaq_f32(acc, vcvtq_f32_s32(sums), vdupq_n_f32(d));
}

// The activation quants of a Q8_0 / Q8_1 block (byte pointer to the block).
static inline int8x16x2_t q8_0_quants(const uint8_t* b) {
  return load_q8(reinterpret_cast<const int8_t*>(b + offsetof(BlockQ8_0, qs)));
}
static inline int8x16x2_t q8_1_quants(const uint8_t* b) {
  return load_q8(reinterpret_cast<const int8_t*>(b + offsetof(BlockQ8_1, qs)));
}

// Internal linkage for these too: an inline member emitted here must never be picked by
// the linker for code compiled with other flags.
namespace {

// Compile-time loop: f(Index<I>{}) for I in [kBegin, kEnd), for lane arguments that must be
// constants (and to keep register tiles indexed by constants only).
template <int kI>
struct Index {
  static constexpr int value = kI;
};
template <int kBegin, int kEnd, typename F>
static inline __attribute__((always_inline)) void unroll(F&& f) {
  if constexpr (kBegin < kEnd) {
    f(Index<kBegin>{});
    unroll<kBegin + 1, kEnd>(f);
  }
}

// Weight unpackers of the types whose dot product is d_w * d_a * (q_w · q_a), all taking Q8_0
// activations: byte pointer to the weight block -> its 32 quants as int8.
struct UnpackQ4_0 {
  static constexpr size_t kBlockBytes = sizeof(BlockQ4_0);
  int8x16x2_t operator()(const uint8_t* b) const { return unpack_q4_0(b + offsetof(BlockQ4_0, qs)); }
};
struct UnpackQ5_0 {
  static constexpr size_t kBlockBytes = sizeof(BlockQ5_0);
  int8x16x2_t operator()(const uint8_t* b) const {
    return unpack_q5_0(b + offsetof(BlockQ5_0, qs), b + offsetof(BlockQ5_0, qh));
  }
};
struct UnpackQ8_0 {
  static constexpr size_t kBlockBytes = sizeof(BlockQ8_0);
  int8x16x2_t operator()(const uint8_t* b) const { return q8_0_quants(b); }
};
struct UnpackIq4Nl {
  static constexpr size_t kBlockBytes = sizeof(BlockIQ4_NL);
  int8x16_t codebook = iq4_nl_codebook();
  int8x16x2_t operator()(const uint8_t* b) const { return unpack_iq4_nl(b + offsetof(BlockIQ4_NL, qs), codebook); }
};

}  // namespace

}  // namespace cellserve::engine::kernels::arm
