#include "fleet/hub/device_attestation.h"

#include "fleet/attest/google_roots.h"

namespace cellserve::fleet {

Result<std::unique_ptr<DeviceAttestation>> DeviceAttestation::create(const std::string& roots_file,
                                                                     const std::string& status_file, int min_patch) {
  auto d = std::make_unique<DeviceAttestation>();
  if (roots_file.empty()) {
    CS_ASSIGN_OR_RETURN(d->roots_,
                        attest::parse_pem_certificates(attest::google_attestation_roots_pem(), "the Google roots"));
  } else {
    CS_ASSIGN_OR_RETURN(d->roots_, attest::load_pem_certificates(roots_file));
  }
  d->min_patch_ = min_patch;
  if (!status_file.empty()) {
    d->status_ = std::make_unique<attest::RevocationListFile>(status_file);
    if (auto first = d->status_->current(); !first.ok()) {
      return Status::invalid_argument("--attestation-status: " + first.status().message());
    }
  }
  return d;
}

attest::AttestationVerdict DeviceAttestation::check(const boost::json::value& evidence, const std::string& nonce_hex,
                                                    const std::string& device_id, std::time_t now) {
  attest::AttestationVerdict refused;
  if (evidence.is_null()) {
    refused.refusal = attest::Refusal::MalformedEvidence;
    refused.reason = "no attestation presented (agent --attestation-command)";
    return refused;
  }
  auto parsed = attest::evidence_from_json(evidence);
  if (!parsed.ok()) {
    refused.refusal = attest::Refusal::MalformedEvidence;
    refused.reason = parsed.status().message();
    return refused;
  }
  const std::optional<std::string> challenge = attest::registration_challenge(nonce_hex, device_id);
  if (!challenge) {
    refused.refusal = attest::Refusal::Misconfigured;
    refused.reason = "the registration's challenge or device key is not 32 bytes";
    return refused;
  }
  attest::AttestationPolicy policy;
  policy.trusted_roots_pem = roots_;
  policy.min_os_patch_level = min_patch_;
  std::shared_ptr<const attest::RevocationList> list;
  if (status_) {
    auto current = status_->current();
    if (!current.ok()) {
      refused.refusal = attest::Refusal::Misconfigured;
      refused.reason = "the attestation status list cannot be read: " + current.status().message();
      return refused;
    }
    list = *current;
    policy.revoked = list.get();
  }
  return attest::verify_attestation(*parsed, *challenge, policy, now);
}

std::string DeviceAttestation::describe(const attest::AttestationVerdict& verdict) {
  if (verdict.attested) return "attested: " + verdict.reason;
  return std::string("not attested: ") + attest::refusal_name(verdict.refusal) + ": " + verdict.reason;
}

}  // namespace cellserve::fleet
