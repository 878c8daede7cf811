#include "fleet/attest/evidence.h"

#include <vector>

#include <gtest/gtest.h>
#include <boost/json.hpp>

#include "fleet/attest/base64.h"

namespace cellserve::fleet::attest {
namespace {

namespace json = boost::json;

TEST(Base64, RoundTripsAndRefusesMalformedText) {
  for (const std::string& s :
       std::vector<std::string>{"", "f", "fo", "foo", "foob", "fooba", "foobar", std::string("\0\xff\x10", 3)}) {
    const std::string text = base64_encode(s);
    EXPECT_EQ(text.size() % 4, 0u);
    EXPECT_EQ(base64_decode(text), s) << text;
  }
  EXPECT_EQ(base64_encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(base64_decode("Zm9vYg=="), "foob");
  EXPECT_EQ(base64_decode("Zm9vYg"), std::nullopt) << "padding is required";
  EXPECT_EQ(base64_decode("Zm9v\nYmFy"), std::nullopt) << "no line breaks";
  EXPECT_EQ(base64_decode("Zm9v_mFy"), std::nullopt) << "no URL-safe alphabet";
  EXPECT_EQ(base64_decode("Zm=vYmFy"), std::nullopt) << "padding only at the end";
  EXPECT_EQ(base64_decode("Z==="), std::nullopt);
}

json::value evidence_json(size_t certs, size_t cert_bytes = 100) {
  json::array chain;
  for (size_t i = 0; i < certs; ++i) chain.emplace_back(base64_encode(std::string(cert_bytes, 'c')));
  return json::object{{"chain", std::move(chain)}, {"signature", base64_encode("sig")}};
}

TEST(Evidence, RoundTripsThroughJson) {
  const AttestationEvidence in{{"leaf", "intermediate", "root"}, "signature"};
  auto out = parse_evidence(json::serialize(to_json(in)));
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  EXPECT_EQ(out->chain_der, in.chain_der);
  EXPECT_EQ(out->signature_der, in.signature_der);
}

TEST(Evidence, BoundsTheChain) {
  EXPECT_TRUE(evidence_from_json(evidence_json(kMaxEvidenceCertificates)).ok());
  auto many = evidence_from_json(evidence_json(kMaxEvidenceCertificates + 1));
  ASSERT_FALSE(many.ok());
  EXPECT_NE(many.status().message().find("too many certificates"), std::string::npos);

  EXPECT_TRUE(evidence_from_json(evidence_json(1, kMaxEvidenceCertificateBytes)).ok());
  auto big = evidence_from_json(evidence_json(1, kMaxEvidenceCertificateBytes + 1));
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("chain[0]"), std::string::npos);

  auto huge = parse_evidence(std::string(kMaxEvidenceJsonBytes + 1, ' '));
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.status().message().find("larger than"), std::string::npos);
}

TEST(Evidence, RefusesWrongShapes) {
  for (const std::string_view bad : {
           R"([])",
           R"({"signature": "c2ln"})",
           R"({"chain": "Y2VydA==", "signature": "c2ln"})",
           R"({"chain": [], "signature": "c2ln"})",
           R"({"chain": [1], "signature": "c2ln"})",
           R"({"chain": ["not base64!"], "signature": "c2ln"})",
           R"({"chain": [""], "signature": "c2ln"})",
           R"({"chain": ["Y2VydA=="]})",
           R"({"chain": ["Y2VydA=="], "signature": 7})",
           R"({"chain": ["Y2VydA=="], "signature": "c2ln)",
       }) {
    auto e = parse_evidence(bad);
    EXPECT_FALSE(e.ok()) << bad;
    if (!e.ok()) {
      EXPECT_EQ(e.status().code(), StatusCode::InvalidArgument) << bad;
    }
  }
}

}  // namespace
}  // namespace cellserve::fleet::attest
