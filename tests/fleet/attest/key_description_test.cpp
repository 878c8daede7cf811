#include "fleet/attest/key_description.h"

#include <gtest/gtest.h>

#include "attestation_fixture.h"

namespace cellserve::fleet::attest {
namespace {

using testing::encode_key_description;
using testing::KeyDescriptionSpec;

std::string bytes(std::initializer_list<int> b) {
  std::string out;
  for (const int v : b) out.push_back(static_cast<char>(v));
  return out;
}

// SEQUENCE { TLV } with a one-byte length.
std::string seq(const std::string& content) { return bytes({0x30, static_cast<int>(content.size())}) + content; }

// An attestation version 2 (Keymaster 3) KeyDescription with `hw` as the hardware list.
std::string version2_description(const std::string& hw) {
  const std::string fields =
      bytes({0x02, 0x01, 0x02, 0x0a, 0x01, 0x01, 0x02, 0x01, 0x03, 0x0a, 0x01, 0x01, 0x04, 0x01, 'c', 0x04, 0x00});
  return seq(fields + seq("") + seq(hw));
}

// rootOfTrust [704] EXPLICIT SEQUENCE { OCTET STRING "k", BOOLEAN TRUE, ENUMERATED Verified }.
const std::string kOldRootOfTrust =
    bytes({0xbf, 0x85, 0x40, 0x0b, 0x30, 0x09, 0x04, 0x01, 'k', 0x01, 0x01, 0xff, 0x0a, 0x01, 0x00});

KeyDescriptionSpec spec_with_challenge() {
  KeyDescriptionSpec s;
  s.challenge = std::string(32, '\x11');
  return s;
}

TEST(KeyDescription, ParsesEveryFieldTheHubReads) {
  KeyDescriptionSpec s = spec_with_challenge();
  s.attestation_level = SecurityLevel::StrongBox;
  s.keymint_level = SecurityLevel::StrongBox;
  s.boot_state = VerifiedBootState::SelfSigned;
  s.device_locked = false;
  s.os_patch_level = 202312;
  auto kd = parse_key_description(encode_key_description(s));
  ASSERT_TRUE(kd.ok()) << kd.status().to_string();
  EXPECT_EQ(kd->attestation_version, 300);
  EXPECT_EQ(kd->attestation_security_level, SecurityLevel::StrongBox);
  EXPECT_EQ(kd->keymint_version, 300);
  EXPECT_EQ(kd->keymint_security_level, SecurityLevel::StrongBox);
  EXPECT_EQ(kd->attestation_challenge, std::string(32, '\x11'));
  EXPECT_EQ(kd->unique_id, "");
  ASSERT_TRUE(kd->hardware_enforced.root_of_trust);
  const RootOfTrust& rot = *kd->hardware_enforced.root_of_trust;
  EXPECT_EQ(rot.verified_boot_key, std::string(32, '\x5a'));
  EXPECT_FALSE(rot.device_locked);
  EXPECT_EQ(rot.verified_boot_state, VerifiedBootState::SelfSigned);
  ASSERT_TRUE(rot.verified_boot_hash);
  EXPECT_EQ(*rot.verified_boot_hash, std::string(32, '\x3c'));
  EXPECT_EQ(kd->hardware_enforced.os_patch_level, 202312);
  EXPECT_FALSE(kd->software_enforced.root_of_trust);
  EXPECT_FALSE(kd->software_enforced.os_patch_level);
}

TEST(KeyDescription, KeepsSoftwareAndHardwareListsApart) {
  KeyDescriptionSpec s = spec_with_challenge();
  s.root_of_trust_in_software_list = true;
  s.patch_in_software_list = true;
  auto kd = parse_key_description(encode_key_description(s));
  ASSERT_TRUE(kd.ok()) << kd.status().to_string();
  EXPECT_FALSE(kd->hardware_enforced.root_of_trust);
  EXPECT_FALSE(kd->hardware_enforced.os_patch_level);
  EXPECT_TRUE(kd->software_enforced.root_of_trust);
  EXPECT_EQ(kd->software_enforced.os_patch_level, 202405);
}

TEST(KeyDescription, RootOfTrustWithoutHashAsBeforeVersion3) {
  auto kd = parse_key_description(version2_description(kOldRootOfTrust));
  ASSERT_TRUE(kd.ok()) << kd.status().to_string();
  EXPECT_EQ(kd->attestation_version, 2);
  EXPECT_EQ(kd->attestation_challenge, "c");
  ASSERT_TRUE(kd->hardware_enforced.root_of_trust);
  EXPECT_TRUE(kd->hardware_enforced.root_of_trust->device_locked);
  EXPECT_FALSE(kd->hardware_enforced.root_of_trust->verified_boot_hash);
}

TEST(KeyDescription, EveryTruncationIsRefusedWithoutCrashing) {
  const std::string der = encode_key_description(spec_with_challenge());
  for (size_t n = 0; n < der.size(); ++n) {
    auto kd = parse_key_description(der.substr(0, n));
    EXPECT_FALSE(kd.ok()) << "accepted a prefix of " << n << " of " << der.size() << " bytes";
    if (!kd.ok()) {
      EXPECT_EQ(kd.status().code(), StatusCode::DataLoss);
    }
  }
  EXPECT_FALSE(parse_key_description(der + std::string(1, '\0')).ok()) << "trailing byte";
}

TEST(KeyDescription, EveryCorruptedByteIsHandled) {
  // Flipping any byte either still parses (a value changed) or is refused; it never reads past
  // the buffer (run under ASan) or aborts.
  const std::string der = encode_key_description(spec_with_challenge());
  for (size_t i = 0; i < der.size(); ++i) {
    for (const unsigned char x : {0x01, 0x80, 0xff}) {
      std::string bad = der;
      bad[i] = static_cast<char>(bad[i] ^ x);
      (void)parse_key_description(bad);
    }
  }
}

TEST(KeyDescription, RefusesGarbageAndBerForms) {
  EXPECT_FALSE(parse_key_description("").ok());
  EXPECT_FALSE(parse_key_description("garbage").ok());
  EXPECT_FALSE(parse_key_description(bytes({0x30, 0x80, 0x00, 0x00})).ok()) << "indefinite length";
  EXPECT_FALSE(parse_key_description(bytes({0x30, 0x84, 0xff, 0xff, 0xff, 0xff})).ok()) << "huge length";
  EXPECT_FALSE(parse_key_description(bytes({0x04, 0x00})).ok()) << "not a SEQUENCE";
  EXPECT_FALSE(parse_key_description(bytes({0x30, 0x00})).ok()) << "empty SEQUENCE";
  // A field [704] whose explicit content claims more bytes than the list holds.
  EXPECT_FALSE(parse_key_description(version2_description(bytes({0xbf, 0x85, 0x40, 0x7f, 0x30, 0x00}))).ok());
  // A list element that is not a context-specific tag.
  EXPECT_FALSE(parse_key_description(version2_description(bytes({0x02, 0x01, 0x00}))).ok());
}

TEST(KeyDescription, RefusesOutOfRangeEnumerationsAndWrongTypes) {
  KeyDescriptionSpec s = spec_with_challenge();
  s.attestation_level = static_cast<SecurityLevel>(7);
  auto level = parse_key_description(encode_key_description(s));
  ASSERT_FALSE(level.ok());
  EXPECT_NE(level.status().message().find("attestationSecurityLevel"), std::string::npos);

  s = spec_with_challenge();
  s.boot_state = static_cast<VerifiedBootState>(9);
  auto state = parse_key_description(encode_key_description(s));
  ASSERT_FALSE(state.ok());
  EXPECT_NE(state.status().message().find("verifiedBootState"), std::string::npos);

  // attestationVersion as an OCTET STRING.
  std::string der = encode_key_description(spec_with_challenge());
  const size_t version_at = der.find(bytes({0x02, 0x02, 0x01, 0x2c}));  // INTEGER 300
  ASSERT_NE(version_at, std::string::npos);
  der[version_at] = '\x04';
  auto type = parse_key_description(der);
  ASSERT_FALSE(type.ok());
  EXPECT_NE(type.status().message().find("attestationVersion"), std::string::npos);
}

TEST(KeyDescription, RefusesARepeatedRootOfTrust) {
  // Two [704] fields could be read differently by two verifiers: refused.
  auto kd = parse_key_description(version2_description(kOldRootOfTrust + kOldRootOfTrust));
  ASSERT_FALSE(kd.ok());
  EXPECT_NE(kd.status().message().find("repeated"), std::string::npos);
}

TEST(KeyDescription, ReadsTheAttestationApplicationId) {
  KeyDescriptionSpec s = spec_with_challenge();
  s.app_packages = {"com.example.a", "com.example.b"};
  s.app_digests = {std::string(32, '\x22')};
  auto kd = parse_key_description(encode_key_description(s));
  ASSERT_TRUE(kd.ok()) << kd.status().to_string();
  ASSERT_TRUE(kd->software_enforced.application_id.has_value());
  EXPECT_FALSE(kd->hardware_enforced.application_id.has_value());
  EXPECT_EQ(kd->software_enforced.application_id->packages,
            (std::vector<std::string>{"com.example.a", "com.example.b"}));
  EXPECT_EQ(kd->software_enforced.application_id->signature_digests, std::vector<std::string>{std::string(32, '\x22')});
}

TEST(KeyDescription, RefusesAnApplicationIdThatIsNotDer) {
  // [709] EXPLICIT OCTET STRING "app-id": the octets are not an AttestationApplicationId.
  const std::string app = bytes({0xbf, 0x85, 0x45, 0x08, 0x04, 0x06, 'a', 'p', 'p', '-', 'i', 'd'});
  auto kd = parse_key_description(version2_description(kOldRootOfTrust + app));
  ASSERT_FALSE(kd.ok());
  EXPECT_NE(kd.status().message().find("attestationApplicationId"), std::string::npos) << kd.status().message();
}

TEST(KeyDescription, NamesSecurityLevelsAndBootStates) {
  EXPECT_STREQ(security_level_name(SecurityLevel::TrustedEnvironment), "TrustedEnvironment");
  EXPECT_STREQ(verified_boot_state_name(VerifiedBootState::Unverified), "Unverified");
}

}  // namespace
}  // namespace cellserve::fleet::attest
