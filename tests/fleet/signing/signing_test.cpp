// Signed answers: the writer signs whole answers in a header and streams in an SSE comment line
// before [DONE] (or at the end of a stream without one); the record survives a round trip; any
// change to the answer or to the record's model, time or deployment breaks it.
#include "fleet/signing/signing_writer.h"

#include <gtest/gtest.h>

#include "fleet/crypto/identity.h"
#include "tests/support/fake_response_writer.h"

namespace cellserve::fleet {
namespace {

struct Fixture {
  Identity device = Identity::generate();
  AnswerSigner signer{device.id(),
                      [this](std::string_view m) { return device.sign(m); },
                      "risk",
                      std::string(64, 'a'),
                      {std::string(64, 'b')}};
};

TEST(SigningWriter, SignsAWholeAnswerInAHeader) {
  Fixture f;
  cellserve::testing::FakeResponseWriter out;
  SigningWriter w(out, f.signer, R"({"messages":[]})");
  w.send(200, "application/json", R"({"choices":[{"text":"RISK_LEVEL: 5"}]})", {{"x-other", "1"}});
  EXPECT_EQ(out.header("x-other"), "1");
  auto sig = answer_signature_from_json(out.header(std::string(kAnswerSignatureHeader)));
  ASSERT_TRUE(sig.ok()) << sig.status().message();
  EXPECT_TRUE(signature_valid(*sig));
  EXPECT_EQ(sig->device, f.device.id());
  EXPECT_EQ(sig->deployment, "risk");
  EXPECT_EQ(sig->model_sha256, std::string(64, 'a'));
  ASSERT_EQ(sig->adapter_sha256.size(), 1u);
  EXPECT_EQ(sig->request_sha256, sha256_hex(R"({"messages":[]})"));
  EXPECT_EQ(sig->response_sha256, sha256_hex(out.body));
  EXPECT_GT(sig->time_ms, 1'700'000'000'000);

  // Every field is covered.
  for (int field = 0; field < 6; ++field) {
    AnswerSignature t = *sig;
    if (field == 0) t.model_sha256[0] = 'c';
    if (field == 1) t.time_ms += 1;
    if (field == 2) t.deployment = "other";
    if (field == 3) t.adapter_sha256.clear();
    if (field == 4) t.response_sha256[5] = t.response_sha256[5] == '0' ? '1' : '0';
    if (field == 5) t.device = Identity::generate().id();
    EXPECT_FALSE(signature_valid(t)) << field;
  }
  // The JSON form round-trips exactly.
  auto back = answer_signature_from_json(answer_signature_json(*sig));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(signed_message(*back), signed_message(*sig));
  EXPECT_EQ(back->signature, sig->signature);
}

// Every data event of a stream is a chunk with choices; nothing but the comment line was added.
void expect_plain_openai_events(std::string_view body) {
  size_t at = 0;
  while (at < body.size()) {
    const size_t end = body.find("\n\n", at);
    ASSERT_NE(end, std::string_view::npos) << body.substr(at);
    const std::string_view block = body.substr(at, end - at);
    at = end + 2;
    if (block.starts_with(kSignatureCommentPrefix) || block == "data: [DONE]") continue;
    ASSERT_TRUE(block.starts_with("data: {\"choices\":[{")) << block;
  }
}

TEST(SigningWriter, SignsAStreamInACommentLineBeforeDone) {
  Fixture f;
  cellserve::testing::FakeResponseWriter out;
  SigningWriter w(out, f.signer, "{}");
  ASSERT_TRUE(w.begin_stream(200, "text/event-stream", {}));
  const std::string events =
      "data: {\"choices\":[{\"delta\":{\"content\":\"RISK\"}}]}\n\n"
      "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n";
  ASSERT_TRUE(w.write(events.substr(0, 40)));
  ASSERT_TRUE(w.write(events.substr(40)));
  ASSERT_TRUE(w.write("data: [DONE]\n\n"));
  w.end_stream();
  ASSERT_TRUE(out.body.starts_with(events + std::string(kSignatureCommentPrefix) + "{"));
  ASSERT_TRUE(out.body.ends_with("}\n\ndata: [DONE]\n\n"));
  expect_plain_openai_events(out.body);
  auto split = split_signed_stream(out.body);
  ASSERT_TRUE(split.ok()) << split.status().message();
  EXPECT_EQ(split->first, events);
  EXPECT_EQ(split->second.response_sha256, sha256_hex(events));
  EXPECT_TRUE(signature_valid(split->second));
  // As saved without its final line break, it still splits; with an event after the comment
  // (bytes the digest does not cover), it does not.
  EXPECT_TRUE(split_signed_stream(out.body.substr(0, out.body.size() - 2)).ok());
  EXPECT_FALSE(split_signed_stream(out.body + "data: {\"choices\":[]}\n\n").ok());
}

// /v1/responses and /completion streams end without [DONE]: the comment is their last line.
TEST(SigningWriter, SignsAStreamWithoutDoneAtItsEnd) {
  Fixture f;
  cellserve::testing::FakeResponseWriter out;
  SigningWriter w(out, f.signer, "{}");
  ASSERT_TRUE(w.begin_stream(200, "text/event-stream", {}));
  const std::string events =
      "event: response.output_text.delta\ndata: {\"delta\":\"RISK\"}\n\n"
      "event: response.completed\ndata: {\"response\":{}}\n\n";
  ASSERT_TRUE(w.write(events));
  w.end_stream();
  EXPECT_TRUE(out.ended);
  ASSERT_TRUE(out.body.starts_with(events + std::string(kSignatureCommentPrefix)));
  ASSERT_TRUE(out.body.ends_with("}\n\n"));
  auto split = split_signed_stream(out.body);
  ASSERT_TRUE(split.ok()) << split.status().message();
  EXPECT_EQ(split->first, events);
  EXPECT_EQ(split->second.response_sha256, sha256_hex(events));
  EXPECT_TRUE(signature_valid(split->second));
}

TEST(SigningWriter, AnAbortedStreamIsNotSigned) {
  Fixture f;
  cellserve::testing::FakeResponseWriter out;
  SigningWriter w(out, f.signer, "{}");
  ASSERT_TRUE(w.begin_stream(200, "text/event-stream", {}));
  ASSERT_TRUE(w.write("data: {\"choices\":[]}\n\n"));
  w.abort_stream();
  EXPECT_EQ(split_signed_stream(out.body).status().code(), StatusCode::NotFound);
  // Nor is a body that is not SSE, even one that contains the words.
  cellserve::testing::FakeResponseWriter plain;
  SigningWriter p(plain, f.signer, "{}");
  ASSERT_TRUE(p.begin_stream(200, "application/octet-stream", {}));
  ASSERT_TRUE(p.write("data: [DONE]\n\n"));
  p.end_stream();
  EXPECT_EQ(plain.body, "data: [DONE]\n\n");
}

TEST(AnswerSignature, RefusesMalformedRecords) {
  Fixture f;
  cellserve::testing::FakeResponseWriter out;
  SigningWriter w(out, f.signer, "{}");
  w.send(200, "application/json", "{}", {});
  const std::string good = out.header(std::string(kAnswerSignatureHeader));
  ASSERT_TRUE(answer_signature_from_json(good).ok());
  for (const std::string& bad : {std::string(""), std::string("[]"), std::string("{\"v\":2}"), std::string(9000, ' '),
                                 good.substr(0, good.size() / 2)}) {
    EXPECT_FALSE(answer_signature_from_json(bad).ok()) << bad.substr(0, 40);
  }
  auto sig = *answer_signature_from_json(good);
  sig.device = "zz";
  EXPECT_FALSE(answer_signature_from_json(answer_signature_json(sig)).ok());
  sig = *answer_signature_from_json(good);
  sig.adapter_sha256.assign(17, std::string(64, 'e'));
  EXPECT_FALSE(answer_signature_from_json(answer_signature_json(sig)).ok());
  sig = *answer_signature_from_json(good);
  sig.time_ms = INT64_MAX;  // a window around it would overflow
  EXPECT_FALSE(answer_signature_from_json(answer_signature_json(sig)).ok());
  sig = *answer_signature_from_json(good);
  sig.deployment = "a\nmodel=x";  // a line break would let one field pose as another
  EXPECT_FALSE(answer_signature_from_json(answer_signature_json(sig)).ok());
  // A stream whose signature comment is cut off, or is not JSON.
  EXPECT_FALSE(split_signed_stream(std::string(kSignatureCommentPrefix) + good).ok());
  EXPECT_FALSE(split_signed_stream("data: {}\n\n" + std::string(kSignatureCommentPrefix) + "{x}\n\n").ok());
  EXPECT_TRUE(split_signed_stream("data: {}\n\n" + std::string(kSignatureCommentPrefix) + good + "\n\n").ok());
}

}  // namespace
}  // namespace cellserve::fleet
