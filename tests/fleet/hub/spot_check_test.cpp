// Spot checks' pure parts: which requests are checked, the answer text read from relayed
// responses, the compared part, the tie-break, the quarantine rule and canaries' validation.
#include <gtest/gtest.h>

#include "fleet/hub/agreement_book.h"
#include "fleet/hub/answer_capture.h"
#include "fleet/hub/canary_book.h"
#include "fleet/hub/spot_check_answer.h"
#include "fleet/spec/agent_protocol.h"

namespace cellserve::fleet {
namespace {

boost::json::object body(std::string_view text) { return parse_json(text, "body")->as_object(); }

TEST(SpotCheckable, GreedyOrSeededWithOneChoice) {
  EXPECT_TRUE(spot_checkable(body(R"({"temperature": 0})")));
  EXPECT_TRUE(spot_checkable(body(R"({"temperature": 0.0, "n": 1})")));
  EXPECT_TRUE(spot_checkable(body(R"({"temperature": 0.9, "seed": 7})")));
  EXPECT_FALSE(spot_checkable(body(R"({})")));  // the default temperature samples
  EXPECT_FALSE(spot_checkable(body(R"({"temperature": 0.2})")));
  EXPECT_FALSE(spot_checkable(body(R"({"temperature": "0"})")));
  EXPECT_FALSE(spot_checkable(body(R"({"seed": "7"})")));
  EXPECT_FALSE(spot_checkable(body(R"({"temperature": 0, "n": 2})")));
  EXPECT_TRUE(spot_checked_endpoint("/chat/completions"));
  EXPECT_TRUE(spot_checked_endpoint("/completions"));
  EXPECT_FALSE(spot_checked_endpoint("/embeddings"));
  EXPECT_FALSE(spot_checked_endpoint("/responses"));
}

TEST(AnswerText, WholeChatAndCompletionAnswers) {
  EXPECT_EQ(answer_text(R"({"choices":[{"index":0,"message":{"role":"assistant","content":"RISK_LEVEL: 2\nwhy"}}]})"),
            "RISK_LEVEL: 2\nwhy");
  EXPECT_EQ(answer_text(R"({"choices":[{"index":0,"text":"amber river."}]})"), "amber river.");
  EXPECT_EQ(answer_text(R"({"error":{"message":"no"}})"), std::nullopt);
  EXPECT_EQ(answer_text("not json"), std::nullopt);
}

TEST(AnswerText, StreamedChatIsTheDeltasInOrder) {
  const std::string sse =
      "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"}}]}\n\n"
      "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"amber\"}}]}\r\n\r\n"
      "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" river.\"}}]}\n\n"
      "data: {\"choices\":[],\"usage\":{\"completion_tokens\":2}}\n\n"
      "data: [DONE]\n\n";
  EXPECT_EQ(answer_text(sse), "amber river.");
  // A stream that did not end, or ended with an error event, is no answer.
  EXPECT_EQ(answer_text(sse.substr(0, sse.find("data: [DONE]"))), std::nullopt);
  EXPECT_EQ(answer_text("data: {\"error\":{\"message\":\"broken\"}}\n\ndata: [DONE]\n\n"), std::nullopt);
}

TEST(ComparedPart, TextOrTheFirstNonBlankLine) {
  EXPECT_EQ(compared_part(" a\nb ", "text"), " a\nb ");
  EXPECT_EQ(compared_part("\n  RISK_LEVEL: 1 \r\nbecause", "first_line"), "RISK_LEVEL: 1");
  EXPECT_EQ(compared_part("", "first_line"), "");
}

TEST(Decide, AgreementThenTieBreakByMajority) {
  CheckVerdict v = decide("x", "x", std::nullopt);
  EXPECT_EQ(v.first, CheckOutcome::Agreed);
  EXPECT_EQ(v.second, CheckOutcome::Agreed);
  EXPECT_FALSE(v.needs_third);

  v = decide("honest", "canned", std::string("honest"));  // the second device is the odd one
  EXPECT_TRUE(v.needs_third);
  EXPECT_EQ(v.first, CheckOutcome::Agreed);
  EXPECT_EQ(v.second, CheckOutcome::Lost);
  EXPECT_EQ(v.third, CheckOutcome::Agreed);

  v = decide("canned", "honest", std::string("honest"));  // the first device is
  EXPECT_EQ(v.first, CheckOutcome::Lost);
  EXPECT_EQ(v.second, CheckOutcome::Agreed);

  v = decide("a", "b", std::nullopt);  // no third device: nobody is blamed
  EXPECT_EQ(v.first, CheckOutcome::Unresolved);
  EXPECT_EQ(v.second, CheckOutcome::Unresolved);
  EXPECT_FALSE(v.third);

  v = decide("a", "b", std::string("c"));  // three answers: no majority
  EXPECT_EQ(v.first, CheckOutcome::Unresolved);
  EXPECT_EQ(v.second, CheckOutcome::Unresolved);
  EXPECT_EQ(v.third, CheckOutcome::Unresolved);
}

TEST(AgreementBook, QuarantinesAfterTooManyLossesInTheWindow) {
  AgreementBook book;
  // Four losses: not yet kMinDecided outcomes.
  for (int i = 0; i < kMinDecided - 1; ++i) {
    EXPECT_FALSE(book.record("liar", CheckOutcome::Lost, 100 + i).quarantined_now);
  }
  EXPECT_FALSE(book.quarantined("liar"));
  const AgreementBook::Recorded r = book.record("liar", CheckOutcome::Lost, 200);
  EXPECT_TRUE(r.quarantined_now);
  EXPECT_TRUE(book.quarantined("liar"));
  EXPECT_EQ(r.record.lost, kMinDecided);
  EXPECT_NE(r.record.reason.find("agreed in 0 of its last 5"), std::string::npos) << r.record.reason;
  // Once quarantined it stays so whatever follows, until released.
  for (int i = 0; i < 30; ++i) EXPECT_FALSE(book.record("liar", CheckOutcome::Agreed, 300).quarantined_now);
  EXPECT_TRUE(book.quarantined("liar"));
  const DeviceAgreement fresh = book.release("liar", 400);
  EXPECT_FALSE(fresh.quarantined);
  EXPECT_EQ(fresh.checks, 0);
  EXPECT_FALSE(book.quarantined("liar"));
}

TEST(AgreementBook, UnresolvedNeverQuarantinesAndAnHonestRateHolds) {
  AgreementBook book;
  for (int i = 0; i < 100; ++i) book.record("honest", CheckOutcome::Unresolved, i);
  EXPECT_FALSE(book.quarantined("honest"));
  // One loss in five is the threshold's edge (80 % agreed): not quarantined.
  for (int i = 0; i < 40; ++i) book.record("honest", i % 5 == 4 ? CheckOutcome::Lost : CheckOutcome::Agreed, i);
  EXPECT_FALSE(book.quarantined("honest"));
  const DeviceAgreement a = *book.get("honest");
  EXPECT_EQ(a.checks, 140);
  EXPECT_EQ(a.agreed, 32);
  EXPECT_EQ(a.lost, 8);
  EXPECT_EQ(a.recent_count, kAgreementWindow);
  EXPECT_EQ(recent_agreed(a), 16);
  EXPECT_DOUBLE_EQ(agreement_rate(a), 0.8);
}

TEST(AgreementBook, TheWindowForgetsOldAgreement) {
  // A device honest for a long time that starts lying is caught within the window, not after
  // its whole history is outweighed.
  AgreementBook book;
  for (int i = 0; i < 1000; ++i) book.record("turned", CheckOutcome::Agreed, i);
  int losses = 0;
  while (!book.quarantined("turned")) {
    book.record("turned", CheckOutcome::Lost, 2000);
    ASSERT_LE(++losses, kAgreementWindow);
  }
  EXPECT_EQ(losses, 5);  // 15 of the last 20 agreed: below 80 %
}

TEST(AnswerCapture, KeepsABoundedCopyAndPassesEverythingOn) {
  struct Sink final : net::ResponseWriter {
    std::string body;
    void send(int, std::string_view, std::string b, const net::HeaderList&) override { body = std::move(b); }
    bool begin_stream(int, std::string_view, const net::HeaderList&) override { return true; }
    bool write(std::string_view d) override {
      body += d;
      return true;
    }
    void end_stream() override {}
    bool client_gone() override { return false; }
  } sink;
  AnswerCapture tee(sink, true);
  tee.begin_stream(200, "text/event-stream", {});
  const std::string chunk(1024, 'x');
  for (size_t i = 0; i <= kMaxComparedResponseBytes / chunk.size(); ++i) tee.write(chunk);
  EXPECT_EQ(sink.body.size(), (kMaxComparedResponseBytes / chunk.size() + 1) * chunk.size());  // all passed on
  EXPECT_FALSE(tee.kept());                                                                    // too long to compare
  EXPECT_TRUE(tee.body().empty());

  std::atomic<bool> stopping{false};
  AnswerCapture alone(&stopping);
  EXPECT_TRUE(alone.begin_stream(200, "text/event-stream", {}));
  EXPECT_TRUE(alone.write("data: [DONE]\n\n"));
  stopping = true;
  EXPECT_FALSE(alone.write("more"));  // the hub stops: the tunnel resets the stream
}

TEST(Canaries, ParsedBoundedAndValidated) {
  const auto ok = parse_canaries(
      "{\"request\": {\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"temperature\": 0}, \"expect\": "
      "\"amber.\"}\n\n{\"request\": {\"prompt\": \"p\", \"seed\": 3}, \"expect\": \"x\"}\n");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  ASSERT_EQ(ok->size(), 2u);
  EXPECT_EQ((*ok)[0].path, "/chat/completions");
  EXPECT_EQ((*ok)[1].path, "/completions");
  EXPECT_EQ((*ok)[0].expect, "amber.");

  const auto message = [](std::string_view text) { return parse_canaries(text).status().message(); };
  EXPECT_NE(message("{\"request\": {\"prompt\": \"p\"}, \"expect\": \"x\"}").find("line 1: request must be greedy"),
            std::string::npos);
  EXPECT_NE(message("\n{\"request\": {\"prompt\": \"p\", \"seed\": 1, \"stream\": true}, \"expect\": \"x\"}")
                .find("line 2: request must not stream"),
            std::string::npos);
  EXPECT_NE(message("{\"request\": {\"input\": \"p\", \"seed\": 1}, \"expect\": \"x\"}").find("messages"),
            std::string::npos);
  EXPECT_NE(message("{\"request\": {\"prompt\": \"p\", \"seed\": 1}}").find("expect must be a string"),
            std::string::npos);
  EXPECT_NE(
      message("{\"request\": {\"prompt\": \"p\", \"seed\": 1}, \"expect\": \"x\", \"id\": 1}").find("unknown key"),
      std::string::npos);
  EXPECT_NE(message("[1]").find("not a JSON object"), std::string::npos);
  EXPECT_NE(message(std::string(kMaxCanaryLineBytes + 1, ' ') + "x").find("longer than"), std::string::npos);
  std::string many;
  for (size_t i = 0; i <= kMaxCanaries; ++i)
    many += "{\"request\": {\"prompt\": \"p\", \"seed\": 1}, \"expect\": \"x\"}\n";
  EXPECT_NE(message(many).find("at most 100"), std::string::npos);
}

TEST(CanaryBook, OneCanaryPerDeviceEveryNRequestsRoundRobin) {
  CanaryBook book;
  EXPECT_FALSE(book.count_request("d", "dev1"));  // no canaries: never
  const std::string cases =
      "{\"request\": {\"prompt\": \"a\", \"seed\": 1}, \"expect\": \"A\"}\n"
      "{\"request\": {\"prompt\": \"b\", \"seed\": 1}, \"expect\": \"B\"}\n";
  ASSERT_TRUE(book.set(CanarySet{"d", cases, 3}).ok());
  EXPECT_EQ(book.summary("d"), (std::pair<size_t, int>(2, 3)));
  std::vector<std::string> sent;
  int other = 0;
  for (int i = 0; i < 9; ++i) {
    if (auto c = book.count_request("d", "dev1")) sent.push_back(c->expect);
    other += book.count_request("d", "dev2").has_value();  // each device counts on its own
  }
  EXPECT_EQ(sent, (std::vector<std::string>{"A", "B", "A"}));
  EXPECT_EQ(other, 3);
  EXPECT_FALSE(book.set(CanarySet{"d", cases, 0}).ok());
  book.remove("d");
  EXPECT_EQ(book.summary("d").first, 0u);
}

}  // namespace
}  // namespace cellserve::fleet
