// 512-bit lane helpers shared by the AVX-512 kernels (avx512/, avx512_bf16/). AVX-512-compiled
// files only; everything has internal linkage (docs/kernels.md, compile-flag hygiene).
//
// GCC 12's plain forms of some AVX-512 intrinsics (_mm512_castps512_ps256, _mm512_cvtph_ps,
// extract and broadcast) start from _mm512_undefined_ps(), which -Wuninitialized reports (GCC bug
// 105593): these use vector shuffles and the zero-masked forms instead, the same instructions.
#pragma once

#include <immintrin.h>

namespace cellserve::engine::kernels::x86 {
namespace {

constexpr __mmask16 kAll16 = 0xFFFF;

inline __m512 cvtph_ps(__m256i h) { return _mm512_maskz_cvtph_ps(kAll16, h); }
// The low and high 8 lanes.
inline __m256 low_half(__m512 v) { return __builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7); }
inline __m256 high_half(__m512 v) { return __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15); }

}  // namespace
}  // namespace cellserve::engine::kernels::x86
