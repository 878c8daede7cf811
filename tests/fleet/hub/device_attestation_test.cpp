// The hub's attestation check at registration: the challenge binds the hub's nonce and the
// device's identity key, so evidence replayed from another registration or made for another
// device is refused; a pinned device must present its pinned key; the status list feed keeps its
// last good copy and re-judges a pin when it changes; no evidence is a reason.
#include "fleet/hub/device_attestation.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "attestation_fixture.h"
#include "fleet/attest/base64.h"
#include "fleet/crypto/identity.h"

namespace cellserve::fleet {
namespace {

namespace fs = std::filesystem;
using attest::Refusal;
using attest::testing::kTestNow;
using attest::testing::TestKeystore;

struct Registration {
  std::string nonce_hex = random_hex(32);
  Identity device = Identity::generate();
  // The challenge the device's keystore must attest: SHA-256(nonce || public key).
  std::string challenge() const {
    unsigned char nonce[32];
    unsigned char key[32];
    EXPECT_TRUE(from_hex(nonce_hex, nonce, 32));
    EXPECT_TRUE(from_hex(device.id(), key, 32));
    return attest::attestation_challenge(std::string_view(reinterpret_cast<char*>(nonce), 32),
                                         std::string_view(reinterpret_cast<char*>(key), 32));
  }
};

class DeviceAttestationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("cs-devattest-" + random_hex(6));
    fs::create_directories(dir_);
    roots_ = (dir_ / "root.pem").string();
    std::ofstream(roots_) << keystore_.trusted_roots()[0];
  }
  void TearDown() override { fs::remove_all(dir_); }
  boost::json::value evidence_for(const std::string& challenge, bool locked = true) const {
    attest::testing::LeafSpec spec;
    spec.description.challenge = challenge;
    spec.description.device_locked = locked;
    return attest::to_json(keystore_.attest(spec));
  }

  Result<std::unique_ptr<DeviceAttestation>> create(const std::string& status = "",
                                                    std::vector<std::string> apps = {}) const {
    return DeviceAttestation::create(AttestationConfig{roots_, status, (dir_ / "scratch").string(), 0, std::move(apps)},
                                     1000);
  }

  TestKeystore keystore_;
  fs::path dir_;
  std::string roots_;
};

TEST_F(DeviceAttestationTest, AttestsTheRegistrationTheEvidenceWasMadeFor) {
  auto check = create();
  ASSERT_TRUE(check.ok()) << check.status().message();
  Registration reg;
  const auto good = (*check)->check(
      AttestationClaim{evidence_for(reg.challenge()), reg.nonce_hex, reg.device.id(), "", ""}, kTestNow, nullptr);
  EXPECT_TRUE(good.attested) << good.reason;
  EXPECT_EQ(DeviceAttestation::describe(good).rfind("attested: ", 0), 0u);

  // A replay: the same evidence at the next registration, which redeemed another nonce.
  Registration next;
  next.device = Identity::generate();
  const auto replayed = (*check)->check(
      AttestationClaim{evidence_for(reg.challenge()), next.nonce_hex, reg.device.id(), "", ""}, kTestNow, nullptr);
  EXPECT_FALSE(replayed.attested);
  EXPECT_EQ(replayed.refusal, Refusal::WrongChallenge);
  // Another device presenting this device's evidence: the challenge names this device's key.
  const auto stolen = (*check)->check(
      AttestationClaim{evidence_for(reg.challenge()), reg.nonce_hex, next.device.id(), "", ""}, kTestNow, nullptr);
  EXPECT_EQ(stolen.refusal, Refusal::WrongChallenge);
  // None, or not evidence at all.
  const auto none = (*check)->check(AttestationClaim{boost::json::value(), reg.nonce_hex, reg.device.id(), "", ""},
                                    kTestNow, nullptr);
  EXPECT_FALSE(none.attested);
  EXPECT_NE(DeviceAttestation::describe(none).find("no attestation presented"), std::string::npos);
  const auto junk = (*check)->check(
      AttestationClaim{boost::json::object{{"chain", 5}}, reg.nonce_hex, reg.device.id(), "", ""}, kTestNow, nullptr);
  EXPECT_EQ(junk.refusal, Refusal::MalformedEvidence);
  const auto unlocked =
      (*check)->check(AttestationClaim{evidence_for(reg.challenge(), false), reg.nonce_hex, reg.device.id(), "", ""},
                      kTestNow, nullptr);
  EXPECT_EQ(unlocked.refusal, Refusal::BootloaderUnlocked);
  EXPECT_NE(DeviceAttestation::describe(unlocked).find("bootloader_unlocked"), std::string::npos);
}

TEST_F(DeviceAttestationTest, TheDefaultRootsAreGooglesSoATestChainIsUntrusted) {
  auto check = DeviceAttestation::create(AttestationConfig{}, 1000);
  ASSERT_TRUE(check.ok()) << check.status().message();
  Registration reg;
  EXPECT_EQ((*check)
                ->check(AttestationClaim{evidence_for(reg.challenge()), reg.nonce_hex, reg.device.id(), "", ""},
                        kTestNow, nullptr)
                .refusal,
            Refusal::UntrustedChain);
}

TEST_F(DeviceAttestationTest, TheStatusFeedKeepsItsLastGoodCopyAndTellsAChange) {
  const std::string status = (dir_ / "status.json").string();
  std::ofstream(status) << R"({"entries": {}})";
  auto check = create(status);
  ASSERT_TRUE(check.ok()) << check.status().message();
  AttestationStatusFeed* feed = (*check)->status_feed();
  ASSERT_NE(feed, nullptr);
  EXPECT_EQ(feed->last_good_ms(), 1000);
  EXPECT_EQ(feed->refresh(2000).value(), false);  // the same list
  Registration reg;
  EXPECT_TRUE((*check)
                  ->check(AttestationClaim{evidence_for(reg.challenge()), reg.nonce_hex, reg.device.id(), "", ""},
                          kTestNow, nullptr)
                  .attested);
  // A half-written file: the fetch fails, the last good copy stays in use.
  std::ofstream(status) << "{";
  EXPECT_FALSE(feed->refresh(3000).ok());
  EXPECT_FALSE(feed->last_error().ok());
  EXPECT_EQ(feed->last_good_ms(), 2000);
  EXPECT_NE(feed->prometheus_text(5000).find("cellserve_attestation_status_age_seconds 3"), std::string::npos);
  EXPECT_NE(feed->prometheus_text(5000).find("cellserve_attestation_status_fetch_failing 1"), std::string::npos);
  // The operator revokes the intermediate (serial 0x1001) by replacing the file.
  const std::string next = status + ".new";
  std::ofstream(next) << R"({"entries": {"1001": {"status": "REVOKED", "reason": "KEY_COMPROMISE"}}})";
  fs::rename(next, status);
  EXPECT_EQ(feed->refresh(4000).value(), true);
  EXPECT_TRUE(feed->last_error().ok());
  const auto revoked = (*check)->check(
      AttestationClaim{evidence_for(reg.challenge()), reg.nonce_hex, reg.device.id(), "", ""}, kTestNow, nullptr);
  EXPECT_EQ(revoked.refusal, Refusal::Revoked) << revoked.reason;

  // A configuration the hub cannot use stops it from starting.
  EXPECT_FALSE(DeviceAttestation::create(AttestationConfig{(dir_ / "missing.pem").string(), "", "", 0, {}}, 0).ok());
  std::ofstream(dir_ / "bad.json") << "{";
  EXPECT_FALSE(create((dir_ / "bad.json").string()).ok());
  EXPECT_FALSE(create("", {"com.a:12"}).ok());
}

TEST_F(DeviceAttestationTest, AKeyMadeAtAnEarlierRegistrationMustSignThisHandshake) {
  auto check = create();
  ASSERT_TRUE(check.ok());
  // The phone's keystore makes its one key at the first registration.
  Registration first;
  attest::testing::LeafSpec spec;
  spec.description.challenge = first.challenge();
  const attest::testing::AttestedKey key = attest::testing::make_leaf(keystore_.intermediate(), spec);
  boost::json::value evidence = attest::to_json(keystore_.evidence_for(key, first.challenge()));
  const auto verdict =
      (*check)->check(AttestationClaim{evidence, first.nonce_hex, first.device.id(), "", ""}, kTestNow, nullptr);
  ASSERT_TRUE(verdict.attested) << verdict.reason;
  const AttestationPin pin = DeviceAttestation::pin_of(first.device.id(), verdict, evidence, 7);
  EXPECT_EQ(pin.key_sha256, attest::key_fingerprint(verdict.key.key_spki));
  EXPECT_EQ(pin.app_packages, std::vector<std::string>{"com.cellserve.agent"});
  EXPECT_EQ(pin.app_digests, std::vector<std::string>{std::string(attest::testing::kTestAppDigestHex)});
  EXPECT_EQ(pin.boot_state, "Verified, locked");

  // The next registration presents the same key, made at the first nonce (key_nonce), and the
  // key signs this handshake.
  Registration again;
  again.device = first.device;
  evidence.as_object()["key_nonce"] = first.nonce_hex;
  const std::string origin = "http://127.0.0.1:8090";
  const auto signed_by = [&](EVP_PKEY* k, const Registration& r) {
    return attest::base64_encode(
        attest::testing::sign_sha256(k, attest::attested_tunnel_digest(origin, r.nonce_hex, r.device.id())));
  };
  AttestationClaim claim{evidence, again.nonce_hex, first.device.id(), origin, signed_by(key.key.get(), again)};
  const auto same = (*check)->check(claim, kTestNow, &pin);
  EXPECT_TRUE(same.attested) << same.reason;
  // Without that signature (a copy of the evidence elsewhere) it is not this registration's.
  claim.attested_signature = "";
  EXPECT_EQ((*check)->check(claim, kTestNow, &pin).refusal, Refusal::WrongChallenge);
  const attest::testing::AttestedKey other_key = attest::testing::make_leaf(keystore_.intermediate(), spec);
  claim.attested_signature = signed_by(other_key.key.get(), again);
  EXPECT_EQ((*check)->check(claim, kTestNow, &pin).refusal, Refusal::WrongChallenge);
  // Another device naming the first nonce: the challenge names the first device's key.
  Registration relay;
  AttestationClaim relayed{evidence, relay.nonce_hex, relay.device.id(), origin, signed_by(key.key.get(), relay)};
  EXPECT_EQ((*check)->check(relayed, kTestNow, nullptr).refusal, Refusal::WrongChallenge);

  // A new key attested for this very registration: another key, held for the operator.
  const auto other = (*check)->check(
      AttestationClaim{evidence_for(again.challenge()), again.nonce_hex, first.device.id(), "", ""}, kTestNow, &pin);
  EXPECT_FALSE(other.attested);
  EXPECT_EQ(other.refusal, Refusal::KeyChanged) << other.reason;
  EXPECT_NE(other.reason.find("approve-key " + first.device.id()), std::string::npos);
  // Without the pin (an approved change) the same evidence is attested, to be pinned anew.
  EXPECT_TRUE((*check)
                  ->check(AttestationClaim{evidence_for(again.challenge()), again.nonce_hex, first.device.id(), "", ""},
                          kTestNow, nullptr)
                  .attested);
}

TEST_F(DeviceAttestationTest, APinIsJudgedAgainWhenTheStatusListChanges) {
  const std::string status = (dir_ / "status.json").string();
  std::ofstream(status) << R"({"entries": {}})";
  auto check = create(status);
  ASSERT_TRUE(check.ok());
  Registration reg;
  const boost::json::value evidence = evidence_for(reg.challenge());
  const auto verdict =
      (*check)->check(AttestationClaim{evidence, reg.nonce_hex, reg.device.id(), "", ""}, kTestNow, nullptr);
  ASSERT_TRUE(verdict.attested);
  const AttestationPin pin = DeviceAttestation::pin_of(reg.device.id(), verdict, evidence, 7);
  EXPECT_TRUE((*check)->rejudge(pin, kTestNow).attested);
  std::ofstream(status) << R"({"entries": {"1001": {"status": "SUSPENDED"}}})";
  ASSERT_TRUE((*check)->status_feed()->refresh(2000).value());
  const auto now = (*check)->rejudge(pin, kTestNow);
  EXPECT_EQ(now.refusal, Refusal::Revoked) << now.reason;
}

TEST_F(DeviceAttestationTest, AnotherAppIsRefusedWhenTheOperatorNamesItsApp) {
  auto check = create("", {"com.operator.app"});
  ASSERT_TRUE(check.ok());
  Registration reg;
  const auto v = (*check)->check(
      AttestationClaim{evidence_for(reg.challenge()), reg.nonce_hex, reg.device.id(), "", ""}, kTestNow, nullptr);
  EXPECT_EQ(v.refusal, Refusal::WrongApp) << v.reason;
  EXPECT_NE(DeviceAttestation::describe(v).find("wrong_app: app com.cellserve.agent"), std::string::npos);
}

}  // namespace
}  // namespace cellserve::fleet
