// The aarch64 tables' dot-product peak loops (engine/kernels/dot_peak.h), each in its extension's
// folder (compiled with its flags). BF16 weights are computed in F32 on these tables, so their
// BF16 peak is NEON's F32 FMA.
#pragma once

#include <cstdint>

namespace cellserve::engine::kernels::arm {

// Twelve independent chains, named (an array of vectors would live in memory): ACC(i) for each i.
#define CS_PEAK_CHAINS12(ACC) ACC(0) ACC(1) ACC(2) ACC(3) ACC(4) ACC(5) ACC(6) ACC(7) ACC(8) ACC(9) ACC(10) ACC(11)

namespace neon {
uint64_t int8_dot_peak(uint64_t iterations, int64_t* sink);  // smull + sadalp (8 per pair)
uint64_t bf16_dot_peak(uint64_t iterations, int64_t* sink);  // fmla .4s (F32)
}  // namespace neon
namespace dotprod {
uint64_t int8_dot_peak(uint64_t iterations, int64_t* sink);  // sdot .4s (16)
}  // namespace dotprod
namespace i8mm {
uint64_t int8_dot_peak(uint64_t iterations, int64_t* sink);  // smmla (32)
}  // namespace i8mm

}  // namespace cellserve::engine::kernels::arm
