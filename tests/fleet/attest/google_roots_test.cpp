#include "fleet/attest/google_roots.h"

#include <openssl/x509v3.h>

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "attestation_fixture.h"
#include "fleet/attest/attestation.h"

namespace cellserve::fleet::attest {
namespace {

std::string sha256_fingerprint(const X509* cert) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EXPECT_EQ(X509_digest(cert, EVP_sha256(), md, &n), 1);
  std::string out;
  char hex[4];
  for (unsigned int i = 0; i < n; ++i) {
    std::snprintf(hex, sizeof hex, i == 0 ? "%02X" : ":%02X", md[i]);
    out += hex;
  }
  return out;
}

// The fingerprints google_roots.pem's comment promises, in file order.
const std::vector<std::string> kFingerprints = {
    "CE:DB:1C:B6:DC:89:6A:E5:EC:79:73:48:BC:E9:28:67:53:C2:B3:8E:E7:1C:E0:FB:E3:4A:9A:12:48:80:0D:FC",
    "6D:9D:B4:CE:6C:5C:0B:29:31:66:D0:89:86:E0:57:74:A8:77:6C:EB:52:5D:9E:43:29:52:0D:E1:2B:A4:BC:C0",
};

TEST(GoogleRoots, EveryShippedRootParsesIsSelfSignedAndHasItsFingerprint) {
  auto roots = parse_pem_certificates(google_attestation_roots_pem(), "google_roots.pem");
  ASSERT_TRUE(roots.ok()) << roots.status().to_string();
  ASSERT_EQ(roots->size(), kFingerprints.size());
  for (size_t i = 0; i < roots->size(); ++i) {
    auto cert = testing::certificate_from_pem((*roots)[i]);
    ASSERT_TRUE(cert.ok());
    EXPECT_EQ(X509_self_signed(cert->get(), /*verify_signature=*/1), 1) << "root " << i;
    EXPECT_EQ(X509_check_ca(cert->get()), 1) << "root " << i;
    EXPECT_EQ(sha256_fingerprint(cert->get()), kFingerprints[i]) << "root " << i;
  }
}

TEST(GoogleRoots, AreTheDefaultPolicy) {
  const AttestationPolicy policy = default_attestation_policy();
  EXPECT_EQ(policy.trusted_roots_pem.size(), kFingerprints.size());
  EXPECT_EQ(policy.min_os_patch_level, 0);
  EXPECT_EQ(policy.revoked, nullptr);
}

TEST(GoogleRoots, RefuseATestKeystoreChain) {
  testing::TestKeystore keystore;
  testing::LeafSpec spec;
  spec.description.challenge = std::string(32, 'c');
  const AttestationVerdict v = verify_attestation(keystore.attest(spec), spec.description.challenge,
                                                  default_attestation_policy(), testing::kTestNow);
  EXPECT_FALSE(v.attested);
  EXPECT_EQ(v.refusal, Refusal::UntrustedChain) << v.reason;
}

}  // namespace
}  // namespace cellserve::fleet::attest
