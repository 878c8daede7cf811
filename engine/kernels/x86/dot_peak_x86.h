// The x86 tables' dot-product peak loops (engine/kernels/dot_peak.h), one per instruction set and
// kind, each in its ISA's folder (compiled with its flags), and what they share.
#pragma once

#include <cstdint>

namespace cellserve::engine::kernels::x86 {

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
