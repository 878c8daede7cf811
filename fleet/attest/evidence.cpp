#include "fleet/attest/evidence.h"

#include <boost/json.hpp>

#include "fleet/attest/base64.h"

namespace cellserve::fleet::attest {
namespace {

namespace json = boost::json;

Status bad(const std::string& what) { return Status::invalid_argument("attestation evidence: " + what); }

// Base64 of at most `limit` decoded bytes, refused by its length before decoding.
Result<std::string> decode_field(const json::value& v, size_t limit, const std::string& what) {
  if (!v.is_string()) return bad(what + " must be a base64 string");
  const json::string& s = v.as_string();
  if (s.size() > (limit + 2) / 3 * 4) return bad(what + " is larger than " + std::to_string(limit) + " bytes");
  std::optional<std::string> bytes = base64_decode(s);
  if (!bytes) return bad(what + " is not padded base64");
  if (bytes->empty()) return bad(what + " is empty");
  if (bytes->size() > limit) return bad(what + " is larger than " + std::to_string(limit) + " bytes");
  return std::move(*bytes);
}

}  // namespace

Result<AttestationEvidence> evidence_from_json(const json::value& v) {
  if (!v.is_object()) return bad("must be a JSON object");
  const json::object& o = v.as_object();
  const json::value* chain = o.if_contains("chain");
  const json::value* signature = o.if_contains("signature");
  if (chain == nullptr || !chain->is_array()) return bad("\"chain\" must be an array of base64 certificates");
  if (signature == nullptr) return bad("\"signature\" is missing");
  const json::array& certs = chain->as_array();
  if (certs.empty()) return bad("\"chain\" is empty");
  if (certs.size() > kMaxEvidenceCertificates) {
    return bad("too many certificates: " + std::to_string(certs.size()) + " (at most " +
               std::to_string(kMaxEvidenceCertificates) + ")");
  }
  AttestationEvidence evidence;
  for (size_t i = 0; i < certs.size(); ++i) {
    CS_ASSIGN_OR_RETURN(std::string der,
                        decode_field(certs[i], kMaxEvidenceCertificateBytes, "chain[" + std::to_string(i) + "]"));
    evidence.chain_der.push_back(std::move(der));
  }
  CS_ASSIGN_OR_RETURN(evidence.signature_der, decode_field(*signature, kMaxEvidenceSignatureBytes, "signature"));
  return evidence;
}

Result<AttestationEvidence> parse_evidence(std::string_view json_text) {
  if (json_text.size() > kMaxEvidenceJsonBytes) {
    return bad("larger than " + std::to_string(kMaxEvidenceJsonBytes) + " bytes");
  }
  boost::system::error_code ec;
  const json::value v = json::parse(json_text, ec);
  if (ec) return bad("not JSON: " + ec.message());
  return evidence_from_json(v);
}

json::value to_json(const AttestationEvidence& evidence) {
  json::array chain;
  for (const std::string& der : evidence.chain_der) chain.emplace_back(base64_encode(der));
  return json::object{{"chain", std::move(chain)}, {"signature", base64_encode(evidence.signature_der)}};
}

}  // namespace cellserve::fleet::attest
