// The Android Key Attestation extension (OID 1.3.6.1.4.1.11129.2.1.17): the KeyDescription a
// device's keystore (Keymaster / KeyMint) puts into the attested key's certificate. Schema:
// https://source.android.com/docs/security/features/keystore/attestation#schema
//
//   KeyDescription ::= SEQUENCE {
//     attestationVersion INTEGER, attestationSecurityLevel SecurityLevel,
//     keyMintVersion INTEGER, keyMintSecurityLevel SecurityLevel,
//     attestationChallenge OCTET STRING, uniqueId OCTET STRING,
//     softwareEnforced AuthorizationList, hardwareEnforced AuthorizationList }
//   AuthorizationList ::= SEQUENCE { ... rootOfTrust [704] EXPLICIT RootOfTrust OPTIONAL, ...
//     osPatchLevel [706] EXPLICIT INTEGER OPTIONAL,
//     attestationApplicationId [709] EXPLICIT OCTET STRING OPTIONAL, ... }  -- every field [n] EXPLICIT OPTIONAL
//   AttestationApplicationId ::= SEQUENCE {                -- the DER inside the [709] OCTET STRING
//     packageInfos SET OF SEQUENCE { packageName OCTET STRING, version INTEGER },
//     signatureDigests SET OF OCTET STRING }              -- SHA-256 of each signing certificate
//   RootOfTrust ::= SEQUENCE { verifiedBootKey OCTET STRING, deviceLocked BOOLEAN,
//     verifiedBootState VerifiedBootState, verifiedBootHash OCTET STRING }  -- hash: version >= 3
//
// Only the fields the hub decides on are extracted; every other AuthorizationList field is
// checked to be a well-formed [n] EXPLICIT element and skipped unread.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace cellserve::fleet::attest {

inline constexpr std::string_view kKeyDescriptionOid = "1.3.6.1.4.1.11129.2.1.17";

enum class SecurityLevel { Software = 0, TrustedEnvironment = 1, StrongBox = 2 };
enum class VerifiedBootState { Verified = 0, SelfSigned = 1, Unverified = 2, Failed = 3 };

// "Software", "TrustedEnvironment", "StrongBox"; "Verified", "SelfSigned", ...
const char* security_level_name(SecurityLevel level);
const char* verified_boot_state_name(VerifiedBootState state);

struct RootOfTrust {
  std::string verified_boot_key;  // raw bytes (a SHA-256 of the boot signing key on most devices)
  bool device_locked = false;
  VerifiedBootState verified_boot_state = VerifiedBootState::Failed;
  std::optional<std::string> verified_boot_hash;  // absent before attestation version 3
};

// The app that asked the keystore for the key (Android fills it in from the package manager).
struct ApplicationId {
  std::vector<std::string> packages;           // package names (several only for a shared uid)
  std::vector<std::string> signature_digests;  // raw bytes, SHA-256 of each signing certificate
};

// The part of an AuthorizationList the hub reads.
struct AuthorizationList {
  std::optional<RootOfTrust> root_of_trust;     // [704]
  std::optional<int> os_patch_level;            // [706], YYYYMM (202405 = May 2024)
  std::optional<ApplicationId> application_id;  // [709]; keystore puts it in softwareEnforced
};

struct KeyDescription {
  int attestation_version = 0;  // 1..4 (Keymaster 2..4.1), 100, 200, 300, 400 (KeyMint)
  SecurityLevel attestation_security_level = SecurityLevel::Software;
  int keymint_version = 0;  // keymasterVersion before KeyMint
  SecurityLevel keymint_security_level = SecurityLevel::Software;
  std::string attestation_challenge;  // raw bytes, as the key's creator passed them
  std::string unique_id;              // raw bytes, usually empty
  AuthorizationList software_enforced;
  AuthorizationList hardware_enforced;  // teeEnforced before KeyMint; the list that counts
};

// Parses the extension's value (the DER inside the extension's OCTET STRING). DataLoss, naming
// the field, for anything that is not one complete, well-formed KeyDescription: truncation,
// indefinite lengths, wrong types, out-of-range enumerations, trailing bytes, a repeated
// rootOfTrust, osPatchLevel or attestationApplicationId, a malformed attestationApplicationId. Never reads past `der`.
Result<KeyDescription> parse_key_description(std::string_view der);

}  // namespace cellserve::fleet::attest
