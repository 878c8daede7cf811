// The hub's verdict on a device's Android Key Attestation evidence.
//
// At registration the hub sends a nonce; the device's keystore creates a key whose attestation
// challenge is attestation_challenge(nonce, identity public key), and returns the key's
// certificate chain plus the key's signature of that challenge (evidence.h). The hub accepts
// the device only when the chain leads to a trusted root, nothing in it is expired or revoked,
// the key lives in a TEE or StrongBox of a device with a locked bootloader and verified boot,
// its OS patch level is recent enough, the challenge is the one the hub issued, and the
// attested key signed it. docs/attestation.md is the operator's view of the same.
#pragma once

#include <ctime>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "fleet/attest/attested_key.h"
#include "fleet/attest/evidence.h"
#include "fleet/attest/key_description.h"
#include "fleet/attest/revocation_list.h"

namespace cellserve::fleet::attest {

// An app allowed to hold attested keys (--attestation-app PACKAGE[:SIGNING_DIGEST_HEX]).
struct AllowedApp {
  std::string package;
  std::string signature_digest;  // raw SHA-256 of the signing certificate; "" : any signer
};

// "com.example.app" or "com.example.app:<64 hex digits>". InvalidArgument otherwise.
Result<AllowedApp> parse_allowed_app(std::string_view text);

struct AttestationPolicy {
  // PEM text, one or more certificates per entry. A chain must end at one of these (or at a
  // re-issued copy of one: same subject, same key, self-signed). Empty: everything is refused.
  std::vector<std::string> trusted_roots_pem;
  int min_os_patch_level = 0;               // YYYYMM; 0: no minimum
  const RevocationList* revoked = nullptr;  // not owned, must outlive the call; nullptr: no list
  // Empty: any app. Otherwise every package of the key's attestationApplicationId must be listed
  // (with one of its signing digests where the entry names one).
  std::vector<AllowedApp> allowed_apps;
};

// Google's hardware attestation roots (google_roots.pem), no patch minimum, no status list.
AttestationPolicy default_attestation_policy();

// Why evidence was refused: one value per check, in the order the checks run.
enum class Refusal {
  None = 0,            // attested
  Misconfigured,       // no or unparsable trusted roots, an expected challenge that is not 32 bytes
  MalformedEvidence,   // empty or oversized chain, a certificate that is not DER X.509
  UntrustedChain,      // no path to a trusted root, a bad signature in the chain, extra certificates
  Expired,             // a certificate's notAfter is before `now`
  NotYetValid,         // a certificate's notBefore is after `now`
  Revoked,             // a serial in the chain has an entry in the status list
  MissingExtension,    // the leaf has no attestation extension
  MalformedExtension,  // the extension does not parse, or appears outside the leaf / twice
  SoftwareOnly,        // attestation or KeyMint security level Software
  WrongChallenge,      // the attested challenge is not the one the hub issued
  NoRootOfTrust,       // no hardware-enforced rootOfTrust
  BootloaderUnlocked,  // rootOfTrust.deviceLocked false
  BootNotVerified,     // rootOfTrust.verifiedBootState other than Verified
  PatchTooOld,         // osPatchLevel below the policy minimum, or missing while one is set
  WrongApp,            // the key's attestationApplicationId names an app the policy does not allow
  BadSignature,        // the attested key did not sign the challenge
  KeyChanged,          // (hub) a device pinned to one attested key presented another: held for approval
};

// "none", "misconfigured", "malformed_evidence", ... (stable: for logs and metrics).
const char* refusal_name(Refusal refusal);

struct AttestationVerdict {
  bool attested = false;
  Refusal refusal = Refusal::None;
  // Why not, one line naming the certificate or field; when attested, a summary such as
  // "TEE, KeyMint 300, verified boot, locked, OS patch 202405".
  std::string reason;
  // From the attestation extension, once it parsed (kept on later refusals, for logs):
  SecurityLevel security_level = SecurityLevel::Software;  // attestationSecurityLevel
  int attestation_version = 0;
  int os_patch_level = 0;  // YYYYMM, hardware-enforced; 0 when absent
  // What the hub pins a device to (attested_key.h), filled in once the extension parsed.
  AttestedKeyFacts key;
};

// Runs every check above, in Refusal's order, and stops at the first failure. `expected_challenge`:
// the 32 raw bytes of attestation_challenge(). `now` is the time validity periods are checked
// against. Never throws or aborts on any input. Thread-safe.
AttestationVerdict verify_attestation(const AttestationEvidence& evidence, std::string_view expected_challenge,
                                      const AttestationPolicy& policy, std::time_t now);

// SHA-256(nonce_bytes || public_key_bytes), 32 raw bytes: the challenge a device's key must be
// attested with. The hub passes its 32-byte nonce and the device's 32-byte Ed25519 public key.
std::string attestation_challenge(std::string_view nonce_bytes, std::string_view public_key_bytes);

// The same for one registration, from the forms the hub and the agent hold: the hub's nonce and
// the device id (its public key), each 64 hex digits. nullopt when either is not 32 bytes of hex.
std::optional<std::string> registration_challenge(std::string_view nonce_hex, std::string_view device_id);

// Every certificate in PEM text, each returned as its own PEM block. InvalidArgument, naming
// `what`, when there is none or one does not parse.
Result<std::vector<std::string>> parse_pem_certificates(std::string_view pem, const std::string& what);

// The same from a file of at most 1 MiB (--attestation-roots). Errors name the file.
Result<std::vector<std::string>> load_pem_certificates(const std::string& path);

}  // namespace cellserve::fleet::attest
