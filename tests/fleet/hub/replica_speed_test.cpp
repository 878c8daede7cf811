// The hub's own speed measurements: what one answer shows (streamed or whole), how a device's
// claim can only lower them, how its usage is clamped by what it relayed, and when a claim counts
// as inflated. Times come from a ManualClock: no test here depends on the machine's speed.
#include "fleet/hub/replica_speed.h"

#include <gtest/gtest.h>

#include "fleet/hub/speed_probe.h"
#include "tests/support/fake_response_writer.h"

namespace cellserve::fleet {
namespace {

using RecordingWriter = testing::FakeResponseWriter;

AnswerSample streamed(double prompt, double completion, double first_s, double total_s) {
  return {prompt, completion, true, first_s, total_s};
}

AnswerSample whole(double prompt, double completion, double total_s) { return {prompt, completion, false, 0, total_s}; }

TEST(SpeedMeter, AStreamMeasuresPrefillFromItsFirstTokenAndDecodeFromTheRest) {
  SpeedMeter m;
  // 400 prompt tokens, first token after 2 s; 21 tokens, the 20 after the first in 4 s.
  m.add(streamed(400, 21, 2, 6), {});
  EXPECT_DOUBLE_EQ(m.prefill().value, 200);
  EXPECT_DOUBLE_EQ(m.decode().value, 5);
  EXPECT_EQ(m.prefill().samples, 1);
  // The next answer moves each figure by kSpeedWeight towards what it showed.
  m.add(streamed(400, 21, 1, 3), {});
  EXPECT_DOUBLE_EQ(m.prefill().value, 200 + kSpeedWeight * (400 - 200));
  EXPECT_DOUBLE_EQ(m.decode().value, 5 + kSpeedWeight * (10 - 5));
}

TEST(SpeedMeter, AWholeAnswerScalesThePriorOrTheMeasuredFiguresByHowFarOffTheyWere) {
  SpeedMeter m;
  // At the prior's 100 / 10 tok/s, 100 prompt + 10 answer tokens predict 2 s; it took 8 s: 4x slower.
  m.add(whole(kPriorPrefillTps, kPriorDecodeTps, 8), {});
  EXPECT_DOUBLE_EQ(m.prefill().value, kPriorPrefillTps / 4);
  EXPECT_DOUBLE_EQ(m.decode().value, kPriorDecodeTps / 4);
  // The next scales what was measured: 100 + 10 tokens at 25 / 2.5 predict 8 s; it took 4 s.
  m.add(whole(100, 10, 4), {});
  EXPECT_DOUBLE_EQ(m.decode().value, 2.5 + kSpeedWeight * (5 - 2.5));
  // Answers that show nothing are ignored.
  m.add(whole(0, 0, 3), {});
  m.add(whole(100, 10, 0), {});
  EXPECT_EQ(m.decode().samples, 2);
}

TEST(SpeedMeter, AClaimCannotShapeAWholeAnswersMeasurement) {
  // A device writing 25 tok/s claims a prompt speed of 1 tok/s, so that a split by its claim would
  // put nearly all of an answer's time on the prompt and make its generation look 50x faster.
  SpeedMeter liar;
  SpeedMeter honest;
  for (int i = 0; i < kTrustedSamples; ++i) {
    liar.add(whole(30, 16, 16 / 25.0), {1, 1e5});
    honest.add(whole(30, 16, 16 / 25.0), {1e5, 25});
  }
  EXPECT_DOUBLE_EQ(liar.decode().value, honest.decode().value);
  EXPECT_LE(routed_speeds({1, 1e5}, liar).decode_tps, routed_speeds({1e5, 25}, honest).decode_tps * 1.5);
}

TEST(SpeedMeter, AClaimMayOnlyLowerTheMeasurementAndAloneCountsNoMoreThanThePrior) {
  SpeedMeter m;
  const SpeedFigures liar{1e6, 1e5};
  // Nothing measured: a claim far above the prior is worth the prior.
  EXPECT_DOUBLE_EQ(routed_speeds(liar, m).prefill_tps, kPriorPrefillTps);
  EXPECT_DOUBLE_EQ(routed_speeds(liar, m).decode_tps, kPriorDecodeTps);
  // A modest claim below the prior lowers it; no claim leaves the prior.
  EXPECT_DOUBLE_EQ(routed_speeds({50, 4}, m).decode_tps, 4);
  EXPECT_DOUBLE_EQ(routed_speeds({}, m).decode_tps, kPriorDecodeTps);
  // Measured at 40 tok/s decode, 2000 prefill: below kTrustedSamples the prior still caps it.
  m.add(streamed(2000, 41, 1, 2), liar);
  EXPECT_DOUBLE_EQ(routed_speeds(liar, m).decode_tps, kPriorDecodeTps);
  for (int i = 1; i < kTrustedSamples; ++i) m.add(streamed(2000, 41, 1, 2), liar);
  // Trusted: the measurement rules, and the claim only lowers it.
  EXPECT_DOUBLE_EQ(routed_speeds(liar, m).decode_tps, 40);
  EXPECT_DOUBLE_EQ(routed_speeds(liar, m).prefill_tps, 2000);
  EXPECT_DOUBLE_EQ(routed_speeds({1e6, 8}, m).decode_tps, 8);
  EXPECT_DOUBLE_EQ(routed_speeds({}, m).decode_tps, 40);
  // A slower measurement lowers it even before it is trusted.
  SpeedMeter slow;
  slow.add(streamed(10, 3, 1, 2), {});
  EXPECT_DOUBLE_EQ(routed_speeds(liar, slow).decode_tps, 2);
}

TEST(SpeedMeter, AClaimIsInflatedOnlyOnceEnoughAnswersShowItFarTooFast) {
  SpeedMeter liar;
  SpeedMeter honest;
  // Both really decode 25 tok/s; the liar claims 100x.
  for (int i = 0; i < kTrustedSamples; ++i) {
    EXPECT_FALSE(liar.claim_inflated()) << "after " << i << " answers";
    liar.add(streamed(40, 26, 0.1, 1.1), {40000, 2500});
    honest.add(streamed(40, 26, 0.1, 1.1), {400, 25});
  }
  EXPECT_TRUE(liar.claim_inflated());
  EXPECT_GT(liar.speed_claim_ratio(), 10);
  EXPECT_FALSE(honest.claim_inflated());
  EXPECT_LT(honest.speed_claim_ratio(), 1.2);
  EXPECT_EQ(liar.answers(), kTrustedSamples);
}

TEST(SpeedMeter, MeasuredFiguresStayWithinWhatTheProtocolAccepts) {
  SpeedMeter m;
  m.add(streamed(1e6, 2, 1e-12, 1), {});
  EXPECT_LE(m.prefill().value, kMaxMeasuredTps);
}

// The probe on a stream: the hub's clock moves between the events it relays.
TEST(SpeedProbe, TimesAStreamOnTheHubsClockAndClampsItsUsageByTheTextItSent) {
  ManualClock clock;
  RecordingWriter out;
  SpeedProbe probe(out, clock);
  clock.advance(std::chrono::seconds(2));
  ASSERT_TRUE(probe.begin_stream(200, "text/event-stream", {}));
  ASSERT_TRUE(probe.write("data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"ab\"}}]}\n\n"));
  clock.advance(std::chrono::seconds(3));
  // Two events in one write (the tunnel coalesces), then the usage: it claims a million tokens.
  ASSERT_TRUE(
      probe.write("data: {\"choices\":[{\"delta\":{\"content\":\"cd\"}}]}\n\ndata: {\"choices\":[{\"delta\":"
                  "{\"content\":\"e\"}}]}\n\n"));
  ASSERT_TRUE(
      probe.write("data: {\"choices\":[],\"usage\":{\"prompt_tokens\":999999,\"completion_tokens\":1000000}}"
                  "\n\ndata: [DONE]\n\n"));
  probe.end_stream();
  const std::optional<AnswerSample> s = probe.answer_sample(120);
  ASSERT_TRUE(s);
  EXPECT_TRUE(s->streamed);
  EXPECT_DOUBLE_EQ(s->first_token_s, 2);
  EXPECT_DOUBLE_EQ(s->total_s, 5);
  EXPECT_DOUBLE_EQ(s->prompt_tokens, 120) << "no more prompt tokens than request bytes";
  EXPECT_DOUBLE_EQ(s->completion_tokens, 5) << "no more completion tokens than bytes of text relayed";
  EXPECT_EQ(out.writes.size(), 3u) << "everything is passed on";
  EXPECT_TRUE(out.ended);
}

TEST(SpeedProbe, AWholeAnswerWithoutUsageIsEstimatedFromItsText) {
  ManualClock clock;
  RecordingWriter out;
  SpeedProbe probe(out, clock);
  clock.advance(std::chrono::milliseconds(500));
  probe.send(200, "application/json", R"({"choices":[{"message":{"content":"0123456789abcdef"}}]})", {});
  const std::optional<AnswerSample> s = probe.answer_sample(400);
  ASSERT_TRUE(s);
  EXPECT_FALSE(s->streamed);
  EXPECT_DOUBLE_EQ(s->total_s, 0.5);
  EXPECT_DOUBLE_EQ(s->prompt_tokens, 100);
  EXPECT_DOUBLE_EQ(s->completion_tokens, 4);
  EXPECT_EQ(out.status, 200);
}

TEST(SpeedProbe, RefusalsBrokenStreamsAndTextlessStreamsShowNoSpeed) {
  ManualClock clock;
  RecordingWriter out;
  SpeedProbe refused(out, clock);
  refused.send(503, "application/json", "{}", {});
  EXPECT_FALSE(refused.answer_sample(10));
  RecordingWriter out2;
  SpeedProbe broken(out2, clock);
  ASSERT_TRUE(broken.begin_stream(200, "text/event-stream", {}));
  ASSERT_TRUE(broken.write("data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\n"));
  broken.abort_stream();
  EXPECT_FALSE(broken.answer_sample(10));
  RecordingWriter out3;
  SpeedProbe empty(out3, clock);
  ASSERT_TRUE(empty.begin_stream(200, "text/event-stream", {}));
  ASSERT_TRUE(empty.write("data: {\"choices\":[{\"delta\":{}}],\"usage\":{\"completion_tokens\":50}}\n\n"));
  empty.end_stream();
  EXPECT_FALSE(empty.answer_sample(10)) << "empty events cannot make a device look fast";
}

}  // namespace
}  // namespace cellserve::fleet
