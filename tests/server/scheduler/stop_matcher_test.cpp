#include "server/scheduler/stop_matcher.h"

#include <gtest/gtest.h>

namespace cellserve::server {
namespace {

TEST(StopMatcher, FindsTheEarliestStop) {
  StopMatcher m({"END", "\n\n"});
  EXPECT_EQ(m.find_stop("abc END x\n\n"), 4u);
  EXPECT_EQ(m.find_stop("a\n\nb END"), 1u);
  EXPECT_EQ(m.find_stop("nothing"), std::string::npos);
}

TEST(StopMatcher, HoldsBackWhatMayBecomeAStop) {
  StopMatcher m({"END"});
  EXPECT_EQ(m.releasable("abc"), 3u);
  EXPECT_EQ(m.releasable("abcE"), 3u);
  EXPECT_EQ(m.releasable("abcEN"), 3u);
  EXPECT_EQ(m.releasable("abcENx"), 6u);
}

TEST(StopMatcher, NoStopsReleasesEverything) {
  StopMatcher m({});
  EXPECT_EQ(m.releasable("abc"), 3u);
  EXPECT_EQ(m.find_stop("abc"), std::string::npos);
}

TEST(StopMatcher, NeverSplitsACharacter) {
  // "é" is C3 A9; a stop starting with A9 alone cannot match valid text but must not split it.
  StopMatcher m({"\xC3\xA9z"});
  const std::string text = "ab\xC3\xA9";
  EXPECT_EQ(m.releasable(text), 2u);
}

}  // namespace
}  // namespace cellserve::server
