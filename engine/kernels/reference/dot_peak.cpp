#include "engine/kernels/dot_peak.h"

namespace cellserve::engine::kernels::reference {
namespace {
constexpr int kAccumulators = 8;
constexpr int kPairs = 4;  // one int8 dot of 4 pairs per accumulator and round
}  // namespace

uint64_t int8_dot_peak(uint64_t iterations, int64_t* sink) {
  int32_t acc[kAccumulators] = {};
  volatile uint8_t one_u8 = 1;
  volatile int8_t one_s8 = 1;
  for (uint64_t i = 0; i < iterations; ++i) {
    const int32_t a = one_u8;  // read every round: nothing to hoist
    const int32_t b = one_s8;
    for (int32_t& v : acc) {
      for (int p = 0; p < kPairs; ++p) v += a * b;
    }
  }
  int64_t sum = 0;
  for (const int32_t v : acc) sum += v;
  *sink = sum;
  return iterations * kAccumulators * kPairs;
}

uint64_t bf16_dot_peak(uint64_t iterations, int64_t* sink) {
  float acc[kAccumulators] = {};
  volatile float one = 1.0f;
  for (uint64_t i = 0; i < iterations; ++i) {
    const float a = one;
    for (float& v : acc) v += a * a;
  }
  double sum = 0;
  for (const float v : acc) sum += v;
  *sink = static_cast<int64_t>(sum);
  return iterations * kAccumulators;
}

}  // namespace cellserve::engine::kernels::reference
