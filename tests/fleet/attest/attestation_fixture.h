// A pretend Android keystore for tests: its own root CA and intermediate (EC P-256, made with
// OpenSSL), and attested leaf keys whose KeyDescription extension this fixture encodes itself
// (an encoder independent of the parser under test). Never real device data.
#pragma once

#include <ctime>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "fleet/attest/evidence.h"
#include "fleet/attest/key_description.h"
#include "fleet/attest/openssl_util.h"

namespace cellserve::fleet::attest::testing {

// 2026-01-01 00:00:00 UTC: the "now" the unit tests verify at (fixed, so no test depends on the clock).
inline constexpr std::time_t kTestNow = 1767225600;
inline constexpr std::time_t kDay = 24 * 3600;

// The knobs of the KeyDescription a leaf carries.
struct KeyDescriptionSpec {
  int attestation_version = 300;
  SecurityLevel attestation_level = SecurityLevel::TrustedEnvironment;
  int keymint_version = 300;
  SecurityLevel keymint_level = SecurityLevel::TrustedEnvironment;
  std::string challenge;  // raw bytes
  bool root_of_trust = true;
  bool root_of_trust_in_software_list = false;  // put it in softwareEnforced instead
  bool device_locked = true;
  VerifiedBootState boot_state = VerifiedBootState::Verified;
  std::optional<int> os_patch_level = 202405;
  bool patch_in_software_list = false;  // put osPatchLevel in softwareEnforced instead
  // attestationApplicationId (softwareEnforced, as keystore writes it): packages and the raw
  // SHA-256 digests of their signing certificates. No packages and no digests: no field.
  std::vector<std::string> app_packages = {"com.cellserve.agent"};
  std::vector<std::string> app_digests = {std::string(32, '\x11')};
};

// The signing digest the fixture's default app carries, in hex.
inline constexpr std::string_view kTestAppDigestHex =
    "1111111111111111111111111111111111111111111111111111111111111111";

// The DER of a KeyDescription per `spec`, with a few other AuthorizationList fields (purpose,
// algorithm, key size, origin, OS version, vendor patch level...) around the ones the hub reads.
std::string encode_key_description(const KeyDescriptionSpec& spec);

// A CA certificate and its key.
struct Authority {
  X509Ptr cert;
  PkeyPtr key;
};

struct Validity {
  std::time_t not_before = kTestNow - 365 * kDay;
  std::time_t not_after = kTestNow + 3650 * kDay;
};

// A self-signed root CA ("CN=<name>").
Authority make_root(const std::string& name, long serial, Validity validity = {});
// A root re-issued: same subject and key as `root`, another serial and validity.
Authority reissue_root(const Authority& root, long serial, Validity validity);
// An intermediate CA signed by `issuer`.
Authority make_intermediate(const Authority& issuer, const std::string& name, long serial, Validity validity = {});

enum class KeyKind { EcP256, Rsa2048 };

struct LeafSpec {
  KeyDescriptionSpec description;
  bool with_extension = true;
  std::optional<std::string> extension_der;      // replaces the encoded KeyDescription (garbage tests)
  long serial = 1;                               // KeyMint's default serial
  std::string subject = "Android Keystore Key";  // KeyMint's default subject
  Validity validity;
  KeyKind key = KeyKind::EcP256;
};

// An attested key and its certificate, signed by `issuer`.
struct AttestedKey {
  X509Ptr cert;
  PkeyPtr key;
};
AttestedKey make_leaf(const Authority& issuer, const LeafSpec& spec);

// Adds an attestation extension holding `der` to `cert` and signs it again with `issuer_key`
// (to put the extension where it does not belong).
void add_attestation_extension(X509* cert, const std::string& der, EVP_PKEY* issuer_key);

// `key`'s SHA-256 signature of `message` (DER ECDSA, or RSA PKCS#1 v1.5).
std::string sign_sha256(EVP_PKEY* key, std::string_view message);
// A fresh EC P-256 key (or RSA-2048).
PkeyPtr make_key(KeyKind kind = KeyKind::EcP256);

std::string der_of(const X509* cert);
std::string pem_of(X509* cert);
std::string pem_of_key(EVP_PKEY* key);
// A certificate / private key from PEM text; InvalidArgument when it does not parse.
Result<X509Ptr> certificate_from_pem(std::string_view pem);
Result<PkeyPtr> key_from_pem(std::string_view pem);

// Root → intermediate → attested leaf, the usual three-certificate chain.
class TestKeystore {
 public:
  // A fresh root and intermediate, valid around kTestNow (or as given).
  explicit TestKeystore(Validity intermediate_validity = {}, long intermediate_serial = 0x1001);
  // A keystore over existing authorities (cs_test_keystore loads them from files).
  TestKeystore(Authority root, Authority intermediate);

  // Evidence for a new key per `spec`: chain [leaf, intermediate, root], and the leaf key's
  // signature of spec.description.challenge.
  AttestationEvidence attest(const LeafSpec& spec) const;
  // The same with a leaf made elsewhere.
  AttestationEvidence evidence_for(const AttestedKey& leaf, std::string_view challenge) const;

  std::vector<std::string> trusted_roots() const { return {pem_of(root_.cert.get())}; }
  const Authority& root() const { return root_; }
  const Authority& intermediate() const { return intermediate_; }

 private:
  Authority root_;
  Authority intermediate_;
};

}  // namespace cellserve::fleet::attest::testing
