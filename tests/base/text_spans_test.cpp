#include "base/text_spans.h"

#include <gtest/gtest.h>

namespace cellserve {
namespace {

using Spans = std::vector<TextSpan>;

TEST(TextSpans, AddMergesTouchingSpansAndDropsEmptyOnes) {
  Spans s;
  add_span(s, 2, 4);
  add_span(s, 4, 6);
  add_span(s, 7, 7);
  add_span(s, 8, 9);
  EXPECT_EQ(s, (Spans{{2, 6}, {8, 9}}));
}

TEST(TextSpans, AppendShiftsAndMergesAtTheSeam) {
  Spans s{{0, 3}};
  append_spans(s, Spans{{0, 1}, {2, 5}}, 3);
  EXPECT_EQ(s, (Spans{{0, 4}, {5, 8}}));
}

TEST(TextSpans, SubSpansClipAndShift) {
  const Spans s{{2, 6}, {8, 12}, {20, 21}};
  EXPECT_EQ(sub_spans(s, 4, 10), (Spans{{0, 2}, {4, 6}}));
  EXPECT_EQ(sub_spans(s, 6, 8), Spans{});
  EXPECT_EQ(sub_spans(s, 0, 100), s);
  EXPECT_EQ(sub_spans(s, 9, 9), Spans{});
}

TEST(TextSpans, OverlapsMeansSharingAByte) {
  const Spans s{{2, 6}, {8, 12}};
  EXPECT_TRUE(overlaps(s, 5, 7));
  EXPECT_TRUE(overlaps(s, 0, 3));
  EXPECT_TRUE(overlaps(s, 7, 9));
  EXPECT_FALSE(overlaps(s, 6, 8));
  EXPECT_FALSE(overlaps(s, 0, 2));
  EXPECT_FALSE(overlaps(s, 12, 30));
  EXPECT_FALSE(overlaps(s, 3, 3));
  EXPECT_FALSE(overlaps(Spans{}, 0, 10));
}

}  // namespace
}  // namespace cellserve
