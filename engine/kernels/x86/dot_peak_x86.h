// The x86 tables' dot-product peak loops (engine/kernels/dot_peak.h), one per instruction set and
// kind, each in its ISA's folder (compiled with its flags), and what they share.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

namespace cellserve::engine::kernels::x86 {

// The sum of a vector's lanes: the loops' sinks. Stored with the ISA's own store: copying the
// vector's bytes (memcpy, bit_cast) kept the chains in memory, spilled every round. Each is
// compiled for the widest ISA it needs and called only from files built with it.
template <size_t N, typename Lane>
double sum_of(const Lane (&lanes)[N]) {
  double sum = 0;
  for (const Lane l : lanes) sum += static_cast<double>(l);
  return sum;
}
__attribute__((target("avx2"))) inline double sum_lanes(__m256i v) {
  alignas(32) int32_t lanes[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), v);
  return sum_of(lanes);
}
__attribute__((target("avx2"))) inline double sum_lanes(__m256 v) {
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, v);
  return sum_of(lanes);
}
__attribute__((target("avx512f"))) inline double sum_lanes(__m512i v) {
  alignas(64) int32_t lanes[16];
  _mm512_store_si512(lanes, v);
  return sum_of(lanes);
}
__attribute__((target("avx512f"))) inline double sum_lanes(__m512 v) {
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, v);
  return sum_of(lanes);
}

// Independent chains, named (an array of vectors would live in memory and every round would
// store it): ACC(i) is stated for each i. Twelve for the 32 zmm registers, eight for the 16 ymm.
#define CS_PEAK_CHAINS12(ACC) ACC(0) ACC(1) ACC(2) ACC(3) ACC(4) ACC(5) ACC(6) ACC(7) ACC(8) ACC(9) ACC(10) ACC(11)
#define CS_PEAK_CHAINS8(ACC) ACC(0) ACC(1) ACC(2) ACC(3) ACC(4) ACC(5) ACC(6) ACC(7)

namespace avx2 {
uint64_t int8_dot_peak(uint64_t iterations, int64_t* sink);  // vpmaddubsw + vpmaddwd + vpaddd
uint64_t bf16_dot_peak(uint64_t iterations, int64_t* sink);  // vfmadd231ps (F32)
}  // namespace avx2
namespace avx_vnni {
uint64_t int8_dot_peak(uint64_t iterations, int64_t* sink);  // vpdpbusd ymm (VEX)
}  // namespace avx_vnni
namespace avx512 {
uint64_t int8_dot_peak(uint64_t iterations, int64_t* sink);  // vpmaddubsw + vpmaddwd + vpaddd zmm
uint64_t bf16_dot_peak(uint64_t iterations, int64_t* sink);  // vfmadd231ps zmm (F32)
}  // namespace avx512
namespace vnni {
uint64_t int8_dot_peak(uint64_t iterations, int64_t* sink);  // vpdpbusd zmm
}  // namespace vnni
namespace bf16 {
uint64_t bf16_dot_peak(uint64_t iterations, int64_t* sink);  // vdpbf16ps zmm
}  // namespace bf16

}  // namespace cellserve::engine::kernels::x86
