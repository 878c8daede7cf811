// Scalar <-> lane helpers shared by the AVX2 kernels. AVX2-compiled files only; everything has
// internal linkage (docs/kernels.md, compile-flag hygiene).
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace cellserve::engine::kernels::x86 {
namespace {

// The fp16 value at p (any alignment) as a float.
inline float load_fp16(const void* p) {
  uint16_t h;
  std::memcpy(&h, p, sizeof(h));
  return _cvtsh_ss(h);
}

// Sum of the 8 lanes in a fixed order, ((l0+l4)+(l2+l6))+((l1+l5)+(l3+l7)): kernels whose
// results must match each other or a scalar reference bit for bit rely on it.
inline float horizontal_sum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

}  // namespace
}  // namespace cellserve::engine::kernels::x86
