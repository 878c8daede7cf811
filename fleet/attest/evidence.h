// What a device sends to prove its key is hardware-backed: the key's attestation certificate
// chain and its signature of the attestation challenge. On the wire (the stdout of the agent's
// --attestation-command, then the registration message), as JSON:
//
//   {"chain": ["<base64 DER>", ...], "signature": "<base64 DER>"}   -- leaf first
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <boost/json/value.hpp>

#include "base/status.h"

namespace cellserve::fleet::attest {

// Real chains hold 3 or 4 certificates of 0.5-1.5 KiB; these bounds only stop garbage.
inline constexpr size_t kMaxEvidenceCertificates = 10;
inline constexpr size_t kMaxEvidenceCertificateBytes = 16 * 1024;
inline constexpr size_t kMaxEvidenceSignatureBytes = 1024;  // an RSA-8192 signature; ECDSA P-256 is ~72
inline constexpr size_t kMaxEvidenceJsonBytes = 256 * 1024;

struct AttestationEvidence {
  std::vector<std::string> chain_der;  // X.509 certificates, DER, leaf (the attested key) first
  std::string signature_der;           // the attested key's SHA-256 signature of the challenge:
                                       // ECDSA (DER Ecdsa-Sig-Value) or RSA PKCS#1 v1.5
};

// The evidence in `v`; InvalidArgument naming the field for a wrong shape, bad base64, an empty
// chain, more than kMaxEvidenceCertificates certificates, a certificate over
// kMaxEvidenceCertificateBytes or a signature over kMaxEvidenceSignatureBytes. Other fields are
// ignored. The certificates themselves are not parsed here (verify_attestation does).
Result<AttestationEvidence> evidence_from_json(const boost::json::value& v);

// The same from JSON text of at most kMaxEvidenceJsonBytes.
Result<AttestationEvidence> parse_evidence(std::string_view json_text);

// The JSON form above.
boost::json::value to_json(const AttestationEvidence& evidence);

}  // namespace cellserve::fleet::attest
