// The hub's attestation check at registration: the challenge binds the hub's nonce and the
// device's identity key, so evidence replayed from another registration or made for another
// device is refused; the status list file is re-read when it changes; no evidence is a reason.
#include "fleet/hub/device_attestation.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "attestation_fixture.h"
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

  TestKeystore keystore_;
  fs::path dir_;
  std::string roots_;
};

TEST_F(DeviceAttestationTest, AttestsTheRegistrationTheEvidenceWasMadeFor) {
  auto check = DeviceAttestation::create(roots_, "", 0);
  ASSERT_TRUE(check.ok()) << check.status().message();
  Registration reg;
  const auto good = (*check)->check(evidence_for(reg.challenge()), reg.nonce_hex, reg.device.id(), kTestNow);
  EXPECT_TRUE(good.attested) << good.reason;
  EXPECT_EQ(DeviceAttestation::describe(good).rfind("attested: ", 0), 0u);

  // A replay: the same evidence at the next registration, which redeemed another nonce.
  Registration next;
  next.device = Identity::generate();
  const auto replayed = (*check)->check(evidence_for(reg.challenge()), next.nonce_hex, reg.device.id(), kTestNow);
  EXPECT_FALSE(replayed.attested);
  EXPECT_EQ(replayed.refusal, Refusal::WrongChallenge);
  // Another device presenting this device's evidence: the challenge names this device's key.
  const auto stolen = (*check)->check(evidence_for(reg.challenge()), reg.nonce_hex, next.device.id(), kTestNow);
  EXPECT_EQ(stolen.refusal, Refusal::WrongChallenge);
  // None, or not evidence at all.
  const auto none = (*check)->check(boost::json::value(), reg.nonce_hex, reg.device.id(), kTestNow);
  EXPECT_FALSE(none.attested);
  EXPECT_NE(DeviceAttestation::describe(none).find("no attestation presented"), std::string::npos);
  const auto junk = (*check)->check(boost::json::object{{"chain", 5}}, reg.nonce_hex, reg.device.id(), kTestNow);
  EXPECT_EQ(junk.refusal, Refusal::MalformedEvidence);
  const auto unlocked = (*check)->check(evidence_for(reg.challenge(), false), reg.nonce_hex, reg.device.id(), kTestNow);
  EXPECT_EQ(unlocked.refusal, Refusal::BootloaderUnlocked);
  EXPECT_NE(DeviceAttestation::describe(unlocked).find("bootloader_unlocked"), std::string::npos);
}

TEST_F(DeviceAttestationTest, TheDefaultRootsAreGooglesSoATestChainIsUntrusted) {
  auto check = DeviceAttestation::create("", "", 0);
  ASSERT_TRUE(check.ok()) << check.status().message();
  Registration reg;
  EXPECT_EQ((*check)->check(evidence_for(reg.challenge()), reg.nonce_hex, reg.device.id(), kTestNow).refusal,
            Refusal::UntrustedChain);
}

TEST_F(DeviceAttestationTest, TheStatusListIsReadAgainWhenItChanges) {
  const std::string status = (dir_ / "status.json").string();
  std::ofstream(status) << R"({"entries": {}})";
  auto check = DeviceAttestation::create(roots_, status, 0);
  ASSERT_TRUE(check.ok()) << check.status().message();
  Registration reg;
  EXPECT_TRUE((*check)->check(evidence_for(reg.challenge()), reg.nonce_hex, reg.device.id(), kTestNow).attested);
  // The operator revokes the intermediate (serial 0x1001) by replacing the file.
  const std::string next = status + ".new";
  std::ofstream(next) << R"({"entries": {"1001": {"status": "REVOKED", "reason": "KEY_COMPROMISE"}}})";
  fs::rename(next, status);
  const auto revoked = (*check)->check(evidence_for(reg.challenge()), reg.nonce_hex, reg.device.id(), kTestNow);
  EXPECT_EQ(revoked.refusal, Refusal::Revoked) << revoked.reason;

  // A configuration the hub cannot use stops it from starting.
  EXPECT_FALSE(DeviceAttestation::create((dir_ / "missing.pem").string(), "", 0).ok());
  std::ofstream(dir_ / "bad.json") << "{";
  EXPECT_FALSE(DeviceAttestation::create(roots_, (dir_ / "bad.json").string(), 0).ok());
}

}  // namespace
}  // namespace cellserve::fleet
