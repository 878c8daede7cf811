// The agent's --attestation-command: the device's keystore helper (docs/attestation.md), run once
// per registration with the attestation challenge in hex as its last argument. Its stdout is the
// evidence JSON the agent presents at /agent/info.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include <boost/json/value.hpp>

#include "base/status.h"

namespace cellserve::fleet {

inline constexpr std::chrono::seconds kAttestationCommandDeadline{30};
inline constexpr size_t kMaxAttestationOutput = 256 * 1024;

// Runs `command` through /bin/sh with `challenge_hex` appended as its last argument (quoted: the
// shell never parses it), and returns its stdout as JSON. Errors, in one line: the command did
// not start, ran past `deadline` (it is killed), exited non-zero (with the first line of its
// stderr), printed more than kMaxAttestationOutput, or printed something other than a JSON object.
Result<boost::json::value> run_attestation_command(const std::string& command, const std::string& challenge_hex,
                                                   std::chrono::milliseconds deadline = kAttestationCommandDeadline);

// The helper's `sign` verb: runs `command sign DIGEST_HEX` (the 32 bytes of
// attest::attested_tunnel_digest in hex) the same way, which must print {"signature": "<base64
// DER>"}: the attested key's SHA-256 signature (ECDSA, or RSA PKCS#1 v1.5) of the 32 raw bytes.
// Returns the base64 as printed, once it decodes to at most attest::kMaxEvidenceSignatureBytes.
Result<std::string> sign_with_attested_key(const std::string& command, std::string_view digest,
                                           std::chrono::milliseconds deadline = kAttestationCommandDeadline);

// The helper's `ecdh` verb: runs `command ecdh PEER_HEX` (a P-256 public key, DER
// SubjectPublicKeyInfo, in hex), which must print {"shared": "<base64>"}: the ECDH secret of the
// attested key with that key. Returns the decoded secret (1..128 bytes).
Result<std::string> ecdh_with_attested_key(const std::string& command, std::string_view peer_spki_der,
                                           std::chrono::milliseconds deadline = kAttestationCommandDeadline);

// The hub nonce of the registration at which the helper made the key `evidence` presents (a
// keystore makes its key once, attested with that registration's challenge): kept in `path` as
// {"leaf": "<SHA-256 of the leaf>", "nonce": "<hex>"}, and replaced by `nonce_hex` when the
// helper presents another leaf than the one remembered (a new key, made now). The hub checks the
// key's challenge against it (docs/attestation.md). A file that cannot be written is reported.
Result<std::string> key_creation_nonce(const std::string& path, const boost::json::value& evidence,
                                       const std::string& nonce_hex);

}  // namespace cellserve::fleet
