// Sealing a device's secrets so that opening them needs its attested key (docs/attestation.md,
// "Sealed secrets"): the hub makes an ephemeral P-256 key E, computes Z = ECDH(E, the pinned
// attested key), derives K = HKDF-SHA256(ikm Z, salt E's DER SubjectPublicKeyInfo, info
// "cellserve attested seal v1\n" ‖ device_id), 32 bytes, and boxes the inner seal (already sealed
// to the device's identity key) with K (libsodium crypto_secretbox: XSalsa20-Poly1305, random
// 24-byte nonce). The device's helper computes Z with the attested key (its `ecdh` verb); the
// agent derives K and opens the box, then opens the inner seal with its identity key.
//
// Wire form: "attested1:" + hex(u16 big-endian length of E ‖ E (DER SPKI) ‖ nonce ‖ box).
#pragma once

#include <openssl/evp.h>

#include <string>
#include <string_view>

#include "base/status.h"

namespace cellserve::fleet::attest {

inline constexpr std::string_view kAttestedSealPrefix = "attested1:";

// Whether `sealed` is in the wire form above.
bool is_attested_seal(std::string_view sealed);

// `inner` sealed as above to the EC P-256 key `key_spki_der` of device `device_id`.
// InvalidArgument when the key is not an EC P-256 public key.
Result<std::string> seal_to_attested_key(std::string_view key_spki_der, std::string_view device_id,
                                         std::string_view inner);

// The ephemeral public key (DER SubjectPublicKeyInfo) the device's helper must do ECDH with.
// DataLoss for anything that is not the wire form.
Result<std::string> attested_seal_peer(std::string_view sealed);

// The inner seal, given the ECDH shared secret (the raw x coordinate, 32 bytes) the helper
// computed. DataLoss when it does not open (another key, altered bytes).
Result<std::string> open_attested_seal(std::string_view sealed, std::string_view device_id,
                                       std::string_view shared_secret);

// ECDH of `own` (a P-256 private key) with the P-256 public key `peer_spki_der`: what a helper's
// `ecdh` verb computes (the test keystore uses it).
Result<std::string> ecdh_shared_secret(EVP_PKEY* own, std::string_view peer_spki_der);

// A fresh P-256 public key (DER SubjectPublicKeyInfo): what the agent asks its helper's `ecdh`
// verb about at registration, to learn whether the helper offers it.
std::string ecdh_probe_peer();

}  // namespace cellserve::fleet::attest
