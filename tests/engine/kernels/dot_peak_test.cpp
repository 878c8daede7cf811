// The dot-product peak loops (engine/kernels/dot_peak.h) of every table this host runs: each
// exists, and does the multiply-adds it claims (all inputs are 1, so the accumulators' sum is the
// count), so `bench --peak` divides real work by time.
#include "engine/kernels/dot_peak.h"

#include <gtest/gtest.h>

#include "engine/kernels/kernel_table.h"

namespace cellserve::engine::kernels {
namespace {

TEST(DotPeak, EveryTableDoesTheMultiplyAddsItClaims) {
  for (const KernelTable* table : available_kernels()) {
    SCOPED_TRACE(std::string(table->isa));
    ASSERT_NE(table->int8_dot_peak, nullptr);
    ASSERT_NE(table->bf16_dot_peak, nullptr);
    for (const uint64_t iterations : {uint64_t{0}, uint64_t{1}, uint64_t{1000}}) {
      int64_t sink = -1;
      const uint64_t int8_macs = table->int8_dot_peak(iterations, &sink);
      EXPECT_EQ(static_cast<uint64_t>(sink), int8_macs);
      EXPECT_EQ(int8_macs == 0, iterations == 0);
      sink = -1;
      const uint64_t bf16_macs = table->bf16_dot_peak(iterations, &sink);
      EXPECT_EQ(static_cast<uint64_t>(sink), bf16_macs);
      EXPECT_EQ(bf16_macs == 0, iterations == 0);
    }
  }
}

}  // namespace
}  // namespace cellserve::engine::kernels
