// The dot-product peak of a kernel table (`cellserve bench --peak`, docs/bench.md): a tight loop
// of the table's widest int8 dot instruction (and its BF16 one) on registers, with independent
// accumulators enough to hide the instruction's latency, so the figure is the core's issue rate
// for that instruction and nothing else. Prefill's share of it says how far the matmuls are from
// the machine's limit. Empty inline-asm barriers keep each round's inputs and accumulators
// opaque, so the compiler can neither hoist the products out of the loop nor merge the chains.
#pragma once

#include <cstdint>

namespace cellserve::engine::kernels {

// Runs `iterations` rounds and returns the multiply-adds done. Every input is 1 (int8: unsigned
// times signed; BF16 or F32: 1.0), so the accumulators' sum, written to *sink, equals that count
// while it stays exact (int32 lanes; floats up to 2^24 per lane): the tests check the loops do the
// work they claim.
using DotPeakFn = uint64_t (*)(uint64_t iterations, int64_t* sink);

namespace reference {
// Plain C++: int8 products summed in int32, and float multiply-adds (what the scalar BF16 path
// computes with). The generic table's peaks.
uint64_t int8_dot_peak(uint64_t iterations, int64_t* sink);
uint64_t bf16_dot_peak(uint64_t iterations, int64_t* sink);
}  // namespace reference

}  // namespace cellserve::engine::kernels
