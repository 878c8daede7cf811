// ScratchFrame: buffers come back to the next frame, nested frames do not overlap, and misuse
// (taking from an enclosing frame, ending frames out of order) stops the process.
#include "engine/models/scratch.h"

#include <gtest/gtest.h>

namespace cellserve::engine {
namespace {

TEST(Scratch, TheNextFrameGetsTheSameMemory) {
  float* first = nullptr;
  {
    ScratchFrame f;
    first = f.take(1000).data();
    first[999] = 1.0f;
  }
  ScratchFrame g;
  const std::span<float> again = g.take(500);  // smaller: the same block
  EXPECT_EQ(again.data(), first);
  EXPECT_EQ(again.size(), 500u);
}

TEST(Scratch, LiveBuffersNeverOverlap) {
  ScratchFrame outer;
  const std::span<float> a = outer.take(64);
  const std::span<float> b = outer.take(64);
  float* inner_buffer = nullptr;
  {
    ScratchFrame inner;
    const std::span<float> c = inner.take(4096);  // grows a block no live buffer uses
    inner_buffer = c.data();
    for (const std::span<float>& s : {a, b}) {
      EXPECT_TRUE(c.data() + c.size() <= s.data() || s.data() + s.size() <= c.data());
    }
    EXPECT_TRUE(a.data() + a.size() <= b.data() || b.data() + b.size() <= a.data());
  }
  // The inner frame's buffer is free again; the outer frame's next buffer reuses it.
  EXPECT_EQ(outer.take(16).data(), inner_buffer);
}

TEST(ScratchDeathTest, TakingFromAnEnclosingFrameStops) {
  EXPECT_DEATH(
      {
        ScratchFrame outer;
        ScratchFrame inner;
        outer.take(4);
      },
      "not the innermost");
}

}  // namespace
}  // namespace cellserve::engine
