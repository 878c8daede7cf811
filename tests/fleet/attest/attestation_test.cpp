#include "fleet/attest/attestation.h"

#include <gtest/gtest.h>
#include <boost/json.hpp>

#include "attestation_fixture.h"

namespace cellserve::fleet::attest {
namespace {

using testing::Authority;
using testing::kDay;
using testing::KeyKind;
using testing::kTestNow;
using testing::LeafSpec;
using testing::TestKeystore;
using testing::Validity;

class AttestationTest : public ::testing::Test {
 protected:
  AttestationTest()
      : challenge_(attestation_challenge(std::string(32, '\x01'), std::string(32, '\x02'))),
        policy_{keystore_.trusted_roots(), 0, nullptr, {}} {}

  LeafSpec spec() const {
    LeafSpec s;
    s.description.challenge = challenge_;
    return s;
  }
  AttestationVerdict verify(const AttestationEvidence& e) const {
    return verify_attestation(e, challenge_, policy_, kTestNow);
  }
  // Checks the refusal and that the reason mentions `words`.
  static void expect_refused(const AttestationVerdict& v, Refusal refusal, const std::string& words) {
    EXPECT_FALSE(v.attested);
    EXPECT_EQ(refusal_name(v.refusal), std::string(refusal_name(refusal))) << v.reason;
    EXPECT_NE(v.reason.find(words), std::string::npos) << "reason: " << v.reason;
  }

  TestKeystore keystore_;
  std::string challenge_;
  AttestationPolicy policy_;
};

TEST(AttestationChallenge, IsSha256OfNonceThenPublicKey) {
  const std::string c = attestation_challenge("ab", "c");  // SHA-256("abc")
  ASSERT_EQ(c.size(), 32u);
  EXPECT_EQ(static_cast<unsigned char>(c[0]), 0xba);
  EXPECT_EQ(static_cast<unsigned char>(c[1]), 0x78);
  EXPECT_EQ(static_cast<unsigned char>(c[31]), 0xad);
  EXPECT_NE(attestation_challenge("ab", "d"), c);
}

TEST_F(AttestationTest, AttestsATeeKeyThroughItsJsonForm) {
  auto evidence = parse_evidence(boost::json::serialize(to_json(keystore_.attest(spec()))));
  ASSERT_TRUE(evidence.ok()) << evidence.status().to_string();
  const AttestationVerdict v = verify(*evidence);
  EXPECT_TRUE(v.attested) << v.reason;
  EXPECT_EQ(v.refusal, Refusal::None);
  EXPECT_EQ(v.reason, "TEE, KeyMint 300, verified boot, locked, OS patch 202405");
  EXPECT_EQ(v.security_level, SecurityLevel::TrustedEnvironment);
  EXPECT_EQ(v.attestation_version, 300);
  EXPECT_EQ(v.os_patch_level, 202405);
}

TEST_F(AttestationTest, AttestsAStrongBoxKey) {
  LeafSpec s = spec();
  s.description.attestation_level = SecurityLevel::StrongBox;
  s.description.keymint_level = SecurityLevel::StrongBox;
  const AttestationVerdict v = verify(keystore_.attest(s));
  EXPECT_TRUE(v.attested) << v.reason;
  EXPECT_EQ(v.security_level, SecurityLevel::StrongBox);
  EXPECT_EQ(v.reason.rfind("StrongBox", 0), 0u) << v.reason;
}

TEST_F(AttestationTest, AttestsAnRsaKey) {
  LeafSpec s = spec();
  s.key = KeyKind::Rsa2048;
  const AttestationVerdict v = verify(keystore_.attest(s));
  EXPECT_TRUE(v.attested) << v.reason;
}

TEST_F(AttestationTest, AcceptsAChainWithoutItsRoot) {
  AttestationEvidence e = keystore_.attest(spec());
  e.chain_der.pop_back();
  EXPECT_TRUE(verify(e).attested) << verify(e).reason;
}

TEST_F(AttestationTest, AcceptsAnExpiredRootReissuedWithTheSameKey) {
  // Google re-issued its RSA root (2016, 2019, 2021, 2022) with one key; devices still send the
  // copy they were provisioned with.
  const Authority old_root = testing::reissue_root(keystore_.root(), 0x200, {kTestNow - 3000 * kDay, kTestNow - kDay});
  const Authority new_root = testing::reissue_root(keystore_.root(), 0x300, {});
  policy_.trusted_roots_pem = {testing::pem_of(new_root.cert.get())};
  AttestationEvidence e = keystore_.attest(spec());
  e.chain_der.back() = testing::der_of(old_root.cert.get());
  const AttestationVerdict v = verify(e);
  EXPECT_TRUE(v.attested) << v.reason;
}

TEST_F(AttestationTest, RefusesAnUnknownRoot) {
  policy_.trusted_roots_pem = {testing::pem_of(testing::make_root("another root", 7).cert.get())};
  expect_refused(verify(keystore_.attest(spec())), Refusal::UntrustedChain,
                 "does not lead to a trusted root: certificate 2 (root)");
  AttestationEvidence e = keystore_.attest(spec());
  e.chain_der.pop_back();
  expect_refused(verify(e), Refusal::UntrustedChain, "does not lead to a trusted root: certificate 1 (intermediate)");
  // A trusted root of the same name but another key: the intermediate's signature fails.
  policy_.trusted_roots_pem = TestKeystore().trusted_roots();
  expect_refused(verify(keystore_.attest(spec())), Refusal::UntrustedChain, "certificate signature failure");
}

TEST_F(AttestationTest, RefusesARootWithATrustedNameButAnotherKey) {
  const Authority impostor = testing::make_root("cellserve test attestation root", 0x100);
  AttestationEvidence e = keystore_.attest(spec());
  e.chain_der.back() = testing::der_of(impostor.cert.get());
  expect_refused(verify(e), Refusal::UntrustedChain, "certificate 2 (root) is not on the verified path");
}

TEST_F(AttestationTest, RefusesACertificateOffThePath) {
  AttestationEvidence e = keystore_.attest(spec());
  e.chain_der.push_back(testing::der_of(TestKeystore().root().cert.get()));
  expect_refused(verify(e), Refusal::UntrustedChain, "certificate 3 (root) is not on the verified path");
}

TEST_F(AttestationTest, RefusesAChainExtendedBelowTheAttestedKey) {
  // Someone holding a genuinely attested key uses it to sign a certificate for a key of their
  // own with a KeyDescription of their choosing: the attested key is no CA.
  testing::AttestedKey attested = testing::make_leaf(keystore_.intermediate(), spec());
  X509_up_ref(attested.cert.get());
  EVP_PKEY_up_ref(attested.key.get());
  const Authority fake_ca{X509Ptr(attested.cert.get()), PkeyPtr(attested.key.get())};
  LeafSpec forged_spec = spec();
  forged_spec.subject = "forged key";
  const testing::AttestedKey forged = testing::make_leaf(fake_ca, forged_spec);
  AttestationEvidence e = keystore_.evidence_for(forged, challenge_);
  e.chain_der.insert(e.chain_der.begin() + 1, testing::der_of(attested.cert.get()));
  expect_refused(verify(e), Refusal::UntrustedChain, "certificate 1 (intermediate)");
  EXPECT_NE(verify(e).reason.find("invalid CA certificate"), std::string::npos) << verify(e).reason;
}

TEST_F(AttestationTest, RefusesTheExtensionOutsideTheLeaf) {
  // Only the occurrence nearest the root could be trusted; one in a CA means the chain is not
  // what KeyMint makes.
  Authority intermediate = testing::make_intermediate(keystore_.root(), "intermediate with extension", 0x2002);
  testing::add_attestation_extension(intermediate.cert.get(), testing::encode_key_description(spec().description),
                                     keystore_.root().key.get());
  const testing::AttestedKey leaf = testing::make_leaf(intermediate, spec());
  const AttestationEvidence e{{testing::der_of(leaf.cert.get()), testing::der_of(intermediate.cert.get()),
                               testing::der_of(keystore_.root().cert.get())},
                              testing::sign_sha256(leaf.key.get(), challenge_)};
  expect_refused(verify(e), Refusal::MalformedExtension,
                 "attestation extension in certificate 1 (intermediate), not only in the leaf");
}

TEST_F(AttestationTest, RefusesARepeatedExtension) {
  testing::AttestedKey leaf = testing::make_leaf(keystore_.intermediate(), spec());
  testing::add_attestation_extension(leaf.cert.get(), testing::encode_key_description(spec().description),
                                     keystore_.intermediate().key.get());
  const AttestationVerdict v = verify(keystore_.evidence_for(leaf, challenge_));
  EXPECT_FALSE(v.attested);
  // OpenSSL 3 itself refuses a certificate with a repeated extension; either refusal will do.
  EXPECT_TRUE(v.refusal == Refusal::MalformedExtension || v.refusal == Refusal::UntrustedChain) << v.reason;
}

TEST_F(AttestationTest, NeverAttestsACorruptedLeaf) {
  const AttestationEvidence good = keystore_.attest(spec());
  for (size_t i = 0; i < good.chain_der[0].size(); i += 5) {
    AttestationEvidence e = good;
    e.chain_der[0][i] = static_cast<char>(e.chain_der[0][i] ^ 0x41);
    const AttestationVerdict v = verify(e);
    EXPECT_FALSE(v.attested) << "byte " << i;
  }
}

TEST_F(AttestationTest, RefusesAnExpiredLeaf) {
  LeafSpec s = spec();
  s.validity = {kTestNow - 30 * kDay, kTestNow - kDay};
  expect_refused(verify(keystore_.attest(s)), Refusal::Expired, "certificate 0 (leaf)");
  EXPECT_NE(verify(keystore_.attest(s)).reason.find("expired at 2025-12-31"), std::string::npos);
}

TEST_F(AttestationTest, RefusesAnExpiredIntermediate) {
  const TestKeystore expired({kTestNow - 30 * kDay, kTestNow - 1});
  policy_.trusted_roots_pem = expired.trusted_roots();
  expect_refused(verify(expired.attest(spec())), Refusal::Expired, "certificate 1 (intermediate)");
}

TEST_F(AttestationTest, RefusesANotYetValidLeaf) {
  LeafSpec s = spec();
  s.validity = {kTestNow + kDay, kTestNow + 30 * kDay};
  expect_refused(verify(keystore_.attest(s)), Refusal::NotYetValid, "certificate 0 (leaf) ");
}

TEST_F(AttestationTest, RefusesANotYetValidIntermediate) {
  const TestKeystore early({kTestNow + 60, kTestNow + 30 * kDay});
  policy_.trusted_roots_pem = early.trusted_roots();
  expect_refused(verify(early.attest(spec())), Refusal::NotYetValid, "certificate 1 (intermediate)");
}

TEST_F(AttestationTest, RefusesARevokedLeafSerial) {
  auto list = RevocationList::parse(R"({"entries": {"00ABCDEF": {"status": "REVOKED", "reason": "KEY_COMPROMISE"}}})");
  ASSERT_TRUE(list.ok());
  policy_.revoked = &*list;
  LeafSpec s = spec();
  s.serial = 0xabcdef;
  expect_refused(verify(keystore_.attest(s)), Refusal::Revoked,
                 "revoked serial abcdef in certificate 0 (leaf): REVOKED (KEY_COMPROMISE)");
  EXPECT_TRUE(verify(keystore_.attest(spec())).attested) << "another serial";
}

TEST_F(AttestationTest, RefusesARevokedIntermediateSerial) {
  auto list = RevocationList::parse(R"({"entries": {"1001": {"status": "SUSPENDED"}}})");
  ASSERT_TRUE(list.ok());
  policy_.revoked = &*list;
  expect_refused(verify(keystore_.attest(spec())), Refusal::Revoked,
                 "revoked serial 1001 in certificate 1 (intermediate): SUSPENDED");
}

TEST_F(AttestationTest, RefusesARevokedRootTheDeviceDidNotSend) {
  auto list = RevocationList::parse(R"({"entries": {"100": {"status": "REVOKED"}}})");
  ASSERT_TRUE(list.ok());
  policy_.revoked = &*list;
  AttestationEvidence e = keystore_.attest(spec());
  e.chain_der.pop_back();
  expect_refused(verify(e), Refusal::Revoked, "revoked serial 100 in the trusted root");
}

TEST_F(AttestationTest, RefusesALeafWithoutTheExtension) {
  LeafSpec s = spec();
  s.with_extension = false;
  expect_refused(verify(keystore_.attest(s)), Refusal::MissingExtension, "no attestation extension");
}

TEST_F(AttestationTest, RefusesAGarbageExtension) {
  LeafSpec s = spec();
  s.extension_der = "garbage";
  expect_refused(verify(keystore_.attest(s)), Refusal::MalformedExtension, "attestation extension: KeyDescription");
}

TEST_F(AttestationTest, RefusesEveryTruncationOfTheExtension) {
  const std::string der = testing::encode_key_description(spec().description);
  for (size_t n = 0; n < der.size(); n += 3) {
    LeafSpec s = spec();
    s.extension_der = der.substr(0, n);
    const AttestationVerdict v = verify(keystore_.attest(s));
    EXPECT_EQ(v.refusal, Refusal::MalformedExtension) << n << ": " << v.reason;
  }
}

TEST_F(AttestationTest, RefusesTruncatedAndGarbageCertificates) {
  const AttestationEvidence good = keystore_.attest(spec());
  for (const size_t at : {size_t{0}, size_t{1}}) {
    for (size_t n = 0; n < good.chain_der[at].size(); n += 7) {
      AttestationEvidence e = good;
      e.chain_der[at].resize(n);
      const AttestationVerdict v = verify(e);
      EXPECT_EQ(v.refusal, Refusal::MalformedEvidence) << at << "/" << n << ": " << v.reason;
    }
  }
  AttestationEvidence e = good;
  e.chain_der[1] = "garbage";
  expect_refused(verify(e), Refusal::MalformedEvidence, "certificate 1 is not a DER X.509 certificate");
  e = good;
  e.chain_der[0] += "x";
  expect_refused(verify(e), Refusal::MalformedEvidence, "certificate 0 (leaf)");
}

TEST_F(AttestationTest, RefusesTooManyOrNoCertificates) {
  AttestationEvidence e = keystore_.attest(spec());
  while (e.chain_der.size() <= kMaxEvidenceCertificates) e.chain_der.push_back(e.chain_der.back());
  expect_refused(verify(e), Refusal::MalformedEvidence, "too many certificates: 11");
  e.chain_der.clear();
  expect_refused(verify(e), Refusal::MalformedEvidence, "empty certificate chain");
}

TEST_F(AttestationTest, RefusesSoftwareOnlyAttestation) {
  LeafSpec s = spec();
  s.description.attestation_level = SecurityLevel::Software;
  expect_refused(verify(keystore_.attest(s)), Refusal::SoftwareOnly, "attestationSecurityLevel Software");
  s = spec();
  s.description.keymint_level = SecurityLevel::Software;
  expect_refused(verify(keystore_.attest(s)), Refusal::SoftwareOnly, "keyMintSecurityLevel Software");
}

TEST_F(AttestationTest, RefusesAWrongChallenge) {
  LeafSpec s = spec();
  s.description.challenge = attestation_challenge(std::string(32, '\x01'), std::string(32, '\x03'));
  expect_refused(verify(keystore_.attest(s)), Refusal::WrongChallenge, "not the one this hub issued");
  s.description.challenge = "";
  expect_refused(verify(keystore_.attest(s)), Refusal::WrongChallenge, "not the one this hub issued");
}

TEST_F(AttestationTest, RefusesAMissingOrSoftwareOnlyRootOfTrust) {
  LeafSpec s = spec();
  s.description.root_of_trust = false;
  expect_refused(verify(keystore_.attest(s)), Refusal::NoRootOfTrust, "no hardware-enforced rootOfTrust");
  s = spec();
  s.description.root_of_trust_in_software_list = true;
  expect_refused(verify(keystore_.attest(s)), Refusal::NoRootOfTrust, "only software-enforced");
}

TEST_F(AttestationTest, RefusesAnUnlockedBootloader) {
  LeafSpec s = spec();
  s.description.device_locked = false;
  expect_refused(verify(keystore_.attest(s)), Refusal::BootloaderUnlocked, "bootloader unlocked");
}

TEST_F(AttestationTest, RefusesEveryBootStateButVerified) {
  for (const VerifiedBootState state :
       {VerifiedBootState::SelfSigned, VerifiedBootState::Unverified, VerifiedBootState::Failed}) {
    LeafSpec s = spec();
    s.description.boot_state = state;
    expect_refused(verify(keystore_.attest(s)), Refusal::BootNotVerified,
                   std::string("verified boot state ") + verified_boot_state_name(state));
  }
}

TEST_F(AttestationTest, RefusesAPatchLevelBelowTheMinimum) {
  policy_.min_os_patch_level = 202406;
  expect_refused(verify(keystore_.attest(spec())), Refusal::PatchTooOld, "OS patch level 202405 below minimum 202406");
  policy_.min_os_patch_level = 202405;
  EXPECT_TRUE(verify(keystore_.attest(spec())).attested);
}

TEST_F(AttestationTest, RefusesAMissingPatchLevelOnlyWhenAMinimumIsSet) {
  LeafSpec s = spec();
  s.description.os_patch_level.reset();
  EXPECT_TRUE(verify(keystore_.attest(s)).attested);
  policy_.min_os_patch_level = 202001;
  expect_refused(verify(keystore_.attest(s)), Refusal::PatchTooOld, "no hardware-enforced osPatchLevel");
  s = spec();
  s.description.patch_in_software_list = true;
  expect_refused(verify(keystore_.attest(s)), Refusal::PatchTooOld, "only software-enforced");
}

TEST_F(AttestationTest, RefusesASignatureByAnotherKey) {
  AttestationEvidence e = keystore_.attest(spec());
  e.signature_der = testing::sign_sha256(testing::make_key().get(), challenge_);
  expect_refused(verify(e), Refusal::BadSignature, "does not verify with the attested key");
}

TEST_F(AttestationTest, RefusesAGarbageSignatureOrOneOverAnotherMessage) {
  const testing::AttestedKey leaf = testing::make_leaf(keystore_.intermediate(), spec());
  AttestationEvidence e = keystore_.evidence_for(leaf, challenge_);
  e.signature_der = "garbage";
  expect_refused(verify(e), Refusal::BadSignature, "does not verify");
  e.signature_der = testing::sign_sha256(leaf.key.get(), "another message");
  expect_refused(verify(e), Refusal::BadSignature, "does not verify");
  e.signature_der.clear();
  expect_refused(verify(e), Refusal::MalformedEvidence, "signature missing");
}

TEST_F(AttestationTest, RefusesWhenMisconfigured) {
  policy_.trusted_roots_pem.clear();
  expect_refused(verify(keystore_.attest(spec())), Refusal::Misconfigured, "no trusted attestation roots");
  policy_.trusted_roots_pem = {"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"};
  expect_refused(verify(keystore_.attest(spec())), Refusal::Misconfigured, "trusted root 0");
  policy_ = {keystore_.trusted_roots(), 0, nullptr, {}};
  const AttestationVerdict v = verify_attestation(keystore_.attest(spec()), "short", policy_, kTestNow);
  expect_refused(v, Refusal::Misconfigured, "32 bytes");
}

TEST(PemCertificates, ParseEveryBlockAndRefuseBrokenText) {
  const TestKeystore k;
  const std::string two =
      testing::pem_of(k.root().cert.get()) + "comment\n" + testing::pem_of(k.intermediate().cert.get());
  auto certs = parse_pem_certificates(two, "roots");
  ASSERT_TRUE(certs.ok()) << certs.status().to_string();
  EXPECT_EQ(certs->size(), 2u);
  EXPECT_FALSE(parse_pem_certificates("", "roots").ok());
  EXPECT_FALSE(parse_pem_certificates("no pem here", "roots").ok());
  auto broken = parse_pem_certificates(two.substr(0, two.size() - 40), "roots.pem");
  ASSERT_FALSE(broken.ok());
  EXPECT_NE(broken.status().message().find("roots.pem: certificate 1"), std::string::npos);
  EXPECT_EQ(load_pem_certificates("/nonexistent/roots.pem").status().code(), StatusCode::NotFound);
}

}  // namespace

TEST_F(AttestationTest, ReportsTheKeyTheHubPinsTo) {
  const AttestationVerdict v = verify(keystore_.attest(spec()));
  ASSERT_TRUE(v.attested) << v.reason;
  EXPECT_FALSE(v.key.key_spki.empty());
  EXPECT_EQ(v.key.challenge, challenge_);
  EXPECT_EQ(v.key.verified_boot_key, std::string(32, '\x5a'));
  EXPECT_EQ(v.key.boot_state, VerifiedBootState::Verified);
  EXPECT_TRUE(v.key.device_locked);
  EXPECT_EQ(v.key.app_packages, std::vector<std::string>{"com.cellserve.agent"});
  EXPECT_EQ(v.key.app_digests, std::vector<std::string>{std::string(32, '\x11')});
  EXPECT_EQ(key_fingerprint(v.key.key_spki).size(), 64u);
}

TEST_F(AttestationTest, RefusesAnAppTheOperatorDidNotAllow) {
  auto allowed = parse_allowed_app("com.cellserve.agent:" + std::string(testing::kTestAppDigestHex));
  ASSERT_TRUE(allowed.ok()) << allowed.status().to_string();
  policy_.allowed_apps = {*allowed};
  EXPECT_TRUE(verify(keystore_.attest(spec())).attested);
  LeafSpec other = spec();
  other.description.app_packages = {"com.relay.anything"};
  expect_refused(verify(keystore_.attest(other)), Refusal::WrongApp, "com.relay.anything");
  LeafSpec resigned = spec();
  resigned.description.app_digests = {std::string(32, '\x33')};
  expect_refused(verify(keystore_.attest(resigned)), Refusal::WrongApp, "3333");
  LeafSpec none = spec();
  none.description.app_packages.clear();
  none.description.app_digests.clear();
  expect_refused(verify(keystore_.attest(none)), Refusal::WrongApp, "no attestationApplicationId");
  // A package alone allows any signer.
  policy_.allowed_apps = {*parse_allowed_app("com.cellserve.agent")};
  EXPECT_TRUE(verify(keystore_.attest(resigned)).attested);
}

TEST(AllowedApp, ParsesPackageAndOptionalDigest) {
  EXPECT_TRUE(parse_allowed_app("com.a").ok());
  EXPECT_TRUE(parse_allowed_app("com.a").value().signature_digest.empty());
  EXPECT_EQ(parse_allowed_app("com.a:" + std::string(64, 'A')).value().signature_digest, std::string(32, '\xaa'));
  EXPECT_FALSE(parse_allowed_app("").ok());
  EXPECT_FALSE(parse_allowed_app("com.a:12").ok());
  EXPECT_FALSE(parse_allowed_app(":" + std::string(64, 'a')).ok());
}

TEST(AttestedKey, TunnelSignatureVerifiesOnlyWithItsKeyAndItsBytes) {
  testing::TestKeystore keystore;
  LeafSpec s;
  s.description.challenge = std::string(32, '\x01');
  const testing::AttestedKey leaf = testing::make_leaf(keystore.intermediate(), s);
  const testing::AttestedKey other = testing::make_leaf(keystore.intermediate(), s);
  const std::string spki = public_key_der(leaf.cert.get());
  const std::string digest = attested_tunnel_digest("http://127.0.0.1:1", std::string(64, 'a'), std::string(64, 'b'));
  ASSERT_EQ(digest.size(), 32u);
  EXPECT_EQ(signature_problem(spki, digest, testing::sign_sha256(leaf.key.get(), digest)), "");
  EXPECT_NE(signature_problem(spki, digest, testing::sign_sha256(other.key.get(), digest)), "");
  const std::string elsewhere =
      attested_tunnel_digest("http://127.0.0.1:2", std::string(64, 'a'), std::string(64, 'b'));
  EXPECT_NE(signature_problem(spki, elsewhere, testing::sign_sha256(leaf.key.get(), digest)), "");
  EXPECT_NE(signature_problem("garbage", digest, testing::sign_sha256(leaf.key.get(), digest)), "");
  // Domain separation: not the attestation challenge of the same nonce and device.
  EXPECT_NE(digest, attestation_challenge(std::string(32, '\xaa'), std::string(32, '\xbb')));
}

}  // namespace cellserve::fleet::attest
