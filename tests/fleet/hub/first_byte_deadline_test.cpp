// The hub's own deadline on a replica's first response byte (issue 43, item 8), on a manual clock.
#include "fleet/hub/first_byte_deadline.h"

#include <gtest/gtest.h>

#include "tests/support/fake_response_writer.h"

namespace cellserve::fleet {
namespace {

using namespace std::chrono_literals;

TEST(FirstByteDeadline, TheClientIsGoneForTheTunnelOnceTheDeadlinePassesWithNothingSent) {
  cellserve::testing::FakeResponseWriter out;
  ManualClock clock;
  FirstByteDeadlineWriter w(out, clock.now() + 30s, clock);
  EXPECT_FALSE(w.client_gone());
  clock.advance(29s);
  EXPECT_FALSE(w.client_gone());
  EXPECT_FALSE(w.expired());
  clock.advance(1s);
  EXPECT_TRUE(w.client_gone());
  EXPECT_TRUE(w.expired());
}

TEST(FirstByteDeadline, AnAnswerThatBeganIsNeverCutByIt) {
  cellserve::testing::FakeResponseWriter out;
  ManualClock clock;
  FirstByteDeadlineWriter w(out, clock.now() + 1s, clock);
  ASSERT_TRUE(w.begin_stream(200, "text/event-stream", {}));
  clock.advance(1h);
  EXPECT_FALSE(w.client_gone());
  EXPECT_FALSE(w.expired());
  EXPECT_TRUE(w.write("data: x\n\n"));
  w.end_stream();
  EXPECT_EQ(out.status, 200);
}

TEST(FirstByteDeadline, TheLimitIsTheSpecsOrDerivedFromTheWorkNeverFromADevice) {
  GatewaySettings g;
  RequestWork work;
  work.prompt_tokens = 7000;
  work.max_tokens = 100;
  // Streamed: the prompt at the slowest prefill; whole: the answer too.
  EXPECT_EQ(first_byte_limit(g, work, true), kFirstByteBase + 350s);
  EXPECT_EQ(first_byte_limit(g, work, false), kFirstByteBase + 450s);
  work.max_tokens = 1e12;  // absurd: capped
  EXPECT_EQ(first_byte_limit(g, work, false), std::chrono::milliseconds(kMaxFirstByteLimit));
  work.max_tokens = -5;
  work.prompt_tokens = -5;
  EXPECT_EQ(first_byte_limit(g, work, false), kFirstByteBase);
  g.first_byte_timeout_ms = 2500;
  EXPECT_EQ(first_byte_limit(g, work, false), 2500ms);
}

}  // namespace
}  // namespace cellserve::fleet
