// Signed answers: the writer signs whole answers in a header and streams in a last event before
// [DONE]; the record survives a round trip; any change to the answer or to the record's model,
// time or deployment breaks it.
#include "fleet/signing/signing_writer.h"

#include <gtest/gtest.h>

#include "fleet/crypto/identity.h"
#include "tests/net/recording_writer.h"

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
  net::RecordingWriter out;
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

TEST(SigningWriter, SignsAStreamInALastEventBeforeDone) {
  Fixture f;
  net::RecordingWriter out;
  SigningWriter w(out, f.signer, "{}");
  ASSERT_TRUE(w.begin_stream(200, "text/event-stream", {}));
  const std::string events =
      "data: {\"choices\":[{\"delta\":{\"content\":\"RISK\"}}]}\n\n"
      "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n";
  ASSERT_TRUE(w.write(events.substr(0, 40)));
  ASSERT_TRUE(w.write(events.substr(40)));
  ASSERT_TRUE(w.write("data: [DONE]\n\n"));
  w.end_stream();
  ASSERT_TRUE(out.body.starts_with(events));
  ASSERT_TRUE(out.body.ends_with("data: [DONE]\n\n"));
  auto split = split_signed_stream(out.body);
  ASSERT_TRUE(split.ok()) << split.status().message();
  EXPECT_EQ(split->first, events);
  EXPECT_EQ(split->second.response_sha256, sha256_hex(events));
  EXPECT_TRUE(signature_valid(split->second));
  // The event is a chunk with no choices, as OpenAI clients expect of a usage chunk.
  EXPECT_NE(out.body.find("data: {\"object\":\"cellserve.signature\",\"choices\":[],"), std::string::npos);
}

TEST(SigningWriter, AStreamWithoutDoneIsNotSigned) {
  Fixture f;
  net::RecordingWriter out;
  SigningWriter w(out, f.signer, "{}");
  ASSERT_TRUE(w.begin_stream(200, "text/event-stream", {}));
  ASSERT_TRUE(w.write("data: {\"choices\":[]}\n\n"));
  w.abort_stream();
  EXPECT_EQ(split_signed_stream(out.body).status().code(), StatusCode::NotFound);
  // Nor is a body that is not SSE, even one that contains the words.
  net::RecordingWriter plain;
  SigningWriter p(plain, f.signer, "{}");
  ASSERT_TRUE(p.begin_stream(200, "application/octet-stream", {}));
  ASSERT_TRUE(p.write("data: [DONE]\n\n"));
  EXPECT_EQ(plain.body, "data: [DONE]\n\n");
}

TEST(AnswerSignature, RefusesMalformedRecords) {
  Fixture f;
  net::RecordingWriter out;
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
  sig.deployment = "a\nmodel=x";  // a line break would let one field pose as another
  EXPECT_FALSE(answer_signature_from_json(answer_signature_json(sig)).ok());
  // A stream whose signature event is cut off, or is not JSON.
  EXPECT_FALSE(split_signed_stream("data: {\"object\":\"cellserve.signature\",\"choices\":[]").ok());
  EXPECT_FALSE(split_signed_stream("data: {\"object\":\"cellserve.signature\"x}\n\n").ok());
}

}  // namespace
}  // namespace cellserve::fleet
