// The attested key as the hub pins a device to it (docs/attestation.md, "Pinning"): after the
// first successful attestation, every tunnel handshake of the device must be signed by this key,
// and a registration presenting another key, boot key or app is held for the operator.
#pragma once

#include <openssl/evp.h>

#include <string>
#include <string_view>
#include <vector>

#include "fleet/attest/key_description.h"

namespace cellserve::fleet::attest {

// The tunnel upgrade header that carries the attested key's signature (base64 DER) of
// attested_tunnel_digest().
inline constexpr std::string_view kAttestedSignatureHeader = "X-Cellserve-Attested-Signature";

// What identifies the attested key and where it lives, as read from verified evidence.
struct AttestedKeyFacts {
  std::string key_spki;           // DER SubjectPublicKeyInfo of the attested (leaf) key
  std::string challenge;          // raw: the attestation challenge the key was created with
  std::string verified_boot_key;  // raw, rootOfTrust.verifiedBootKey
  VerifiedBootState boot_state = VerifiedBootState::Failed;
  bool device_locked = false;
  std::vector<std::string> app_packages;  // attestationApplicationId package names
  std::vector<std::string> app_digests;   // raw SHA-256 digests of the app's signing certificates
};

// Lower-case hex SHA-256 of a DER SubjectPublicKeyInfo: the attested key's fingerprint.
std::string key_fingerprint(std::string_view spki_der);

// The 32 raw bytes a pinned device's attested key signs at every tunnel handshake (the helper's
// `sign` verb): SHA-256 of "cellserve attested tunnel v1\n" ‖ origin ‖ "\n" ‖ challenge_hex ‖
// "\n" ‖ device_id, where origin is the hub as the agent dialed it (X-Cellserve-Origin),
// challenge_hex the hub's 64-hex-digit nonce and device_id the agent's Ed25519 key in hex. The
// prefix keeps these bytes apart from the attestation challenge, SHA-256(nonce ‖ key).
std::string attested_tunnel_digest(std::string_view origin, std::string_view challenge_hex, std::string_view device_id);

// Empty when `signature_der` (SHA-256 with ECDSA, DER; or RSA PKCS#1 v1.5 of at least 2048 bits)
// verifies over `message` with `key`; otherwise why not, in one line. Never throws.
std::string signature_problem(EVP_PKEY* key, std::string_view message, std::string_view signature_der);

// The same with the key given as DER SubjectPublicKeyInfo.
std::string signature_problem(std::string_view spki_der, std::string_view message, std::string_view signature_der);

}  // namespace cellserve::fleet::attest
