#include "fleet/hub/device_attestation.h"

#include <boost/json.hpp>

#include "fleet/attest/base64.h"
#include "fleet/attest/google_roots.h"
#include "fleet/crypto/identity.h"

namespace cellserve::fleet {
namespace {

attest::AttestationVerdict refused(attest::Refusal refusal, std::string reason) {
  attest::AttestationVerdict v;
  v.refusal = refusal;
  v.reason = std::move(reason);
  return v;
}

std::string hex(std::string_view raw) { return to_hex(reinterpret_cast<const unsigned char*>(raw.data()), raw.size()); }

std::vector<std::string> hex_all(const std::vector<std::string>& raw) {
  std::vector<std::string> out;
  for (const std::string& r : raw) out.push_back(hex(r));
  return out;
}

std::string boot_text(const attest::AttestedKeyFacts& f) {
  return std::string(attest::verified_boot_state_name(f.boot_state)) + (f.device_locked ? ", locked" : ", unlocked");
}

// What differs between the verified key `f` and the pin ("" : nothing).
std::string pin_difference(const attest::AttestedKeyFacts& f, const AttestationPin& pin) {
  if (attest::key_fingerprint(f.key_spki) != pin.key_sha256) {
    return "another attested key (" + attest::key_fingerprint(f.key_spki).substr(0, 16) + ", pinned " +
           pin.key_sha256.substr(0, 16) + ")";
  }
  if (hex(f.verified_boot_key) != pin.verified_boot_key || boot_text(f) != pin.boot_state) {
    return "another verified boot key or state";
  }
  if (f.app_packages != pin.app_packages || hex_all(f.app_digests) != pin.app_digests) return "another app";
  return {};
}

}  // namespace

bool DeviceAttestation::offers_ecdh(const boost::json::value& evidence) {
  const boost::json::value* ecdh = evidence.is_object() ? evidence.as_object().if_contains("ecdh") : nullptr;
  return ecdh != nullptr && ecdh->is_bool() && ecdh->as_bool();
}

Result<std::unique_ptr<DeviceAttestation>> DeviceAttestation::create(const AttestationConfig& config, int64_t now_ms) {
  auto d = std::make_unique<DeviceAttestation>();
  if (config.roots_file.empty()) {
    CS_ASSIGN_OR_RETURN(d->roots_,
                        attest::parse_pem_certificates(attest::google_attestation_roots_pem(), "the Google roots"));
  } else {
    CS_ASSIGN_OR_RETURN(d->roots_, attest::load_pem_certificates(config.roots_file));
  }
  d->min_patch_ = config.min_patch;
  for (const std::string& app : config.allowed_apps) {
    CS_ASSIGN_OR_RETURN(attest::AllowedApp allowed, attest::parse_allowed_app(app));
    d->apps_.push_back(std::move(allowed));
  }
  if (!config.status_source.empty()) {
    d->status_ = std::make_unique<AttestationStatusFeed>(config.status_source, config.scratch_path);
    if (auto first = d->status_->refresh(now_ms); !first.ok()) {
      return Status::invalid_argument("--attestation-status: " + first.status().message());
    }
  }
  return d;
}

attest::AttestationPolicy DeviceAttestation::policy(std::shared_ptr<const attest::RevocationList>* hold) const {
  attest::AttestationPolicy policy;
  policy.trusted_roots_pem = roots_;
  policy.min_os_patch_level = min_patch_;
  policy.allowed_apps = apps_;
  if (status_) {
    *hold = status_->current();  // never null: create() fetched it once
    policy.revoked = hold->get();
  }
  return policy;
}

attest::AttestationVerdict DeviceAttestation::verify(const attest::AttestationEvidence& evidence,
                                                     const std::string& challenge, std::time_t now) const {
  std::shared_ptr<const attest::RevocationList> list;
  return attest::verify_attestation(evidence, challenge, policy(&list), now);
}

attest::AttestationVerdict DeviceAttestation::check(const AttestationClaim& claim, std::time_t now,
                                                    const AttestationPin* pin) {
  if (claim.evidence.is_null()) {
    return refused(attest::Refusal::MalformedEvidence, "no attestation presented (agent --attestation-command)");
  }
  auto parsed = attest::evidence_from_json(claim.evidence);
  if (!parsed.ok()) return refused(attest::Refusal::MalformedEvidence, parsed.status().message());
  const std::optional<std::string> fresh = attest::registration_challenge(claim.nonce_hex, claim.device_id);
  if (!fresh)
    return refused(attest::Refusal::Misconfigured, "the registration's challenge or device key is not 32 bytes");
  attest::AttestationVerdict v = verify(*parsed, *fresh, now);
  if (v.refusal == attest::Refusal::WrongChallenge) v = check_earlier_key(*parsed, claim, now, v);
  if (!v.attested || pin == nullptr) return v;
  if (std::string what = pin_difference(v.key, *pin); !what.empty()) {
    v.attested = false;
    v.refusal = attest::Refusal::KeyChanged;
    v.reason = "this device is pinned to its attested key and presented " + what +
               "; held until the operator approves: cellserve fleet approve-key " + claim.device_id;
  }
  return v;
}

attest::AttestationVerdict DeviceAttestation::check_earlier_key(const attest::AttestationEvidence& evidence,
                                                                const AttestationClaim& claim, std::time_t now,
                                                                const attest::AttestationVerdict& fresh) const {
  const boost::json::value* key_nonce = claim.evidence.as_object().if_contains("key_nonce");
  if (key_nonce == nullptr || !key_nonce->is_string()) return fresh;
  const std::optional<std::string> earlier =
      attest::registration_challenge(std::string_view(key_nonce->as_string()), claim.device_id);
  if (!earlier) return fresh;
  attest::AttestationVerdict v = verify(evidence, *earlier, now);
  if (v.refusal == attest::Refusal::WrongChallenge) return fresh;
  if (!v.attested) return v;
  // The key was made at an earlier registration of this device: it proves itself now by having
  // signed this handshake.
  const std::optional<std::string> signature = attest::base64_decode(claim.attested_signature);
  const std::string why =
      !signature ? std::string("no signature")
                 : attest::signature_problem(
                       v.key.key_spki, attest::attested_tunnel_digest(claim.origin, claim.nonce_hex, claim.device_id),
                       *signature);
  if (why.empty()) return v;
  return refused(attest::Refusal::WrongChallenge,
                 "the key was attested at an earlier registration and did not sign this handshake (" + why + ")");
}

attest::AttestationVerdict DeviceAttestation::rejudge(const AttestationPin& pin, std::time_t now) {
  boost::system::error_code ec;
  const boost::json::value evidence = boost::json::parse(pin.evidence, ec);
  if (ec) return refused(attest::Refusal::MalformedEvidence, "the stored evidence does not parse");
  auto parsed = attest::evidence_from_json(evidence);
  if (!parsed.ok()) return refused(attest::Refusal::MalformedEvidence, parsed.status().message());
  unsigned char pinned[32];
  if (!from_hex(pin.challenge, pinned, sizeof(pinned))) {
    return refused(attest::Refusal::Misconfigured, "the stored pin's challenge is not 32 bytes of hex");
  }
  return verify(*parsed, std::string(reinterpret_cast<const char*>(pinned), 32), now);
}

AttestationPin DeviceAttestation::pin_of(const std::string& device_id, const attest::AttestationVerdict& verdict,
                                         const boost::json::value& evidence, int64_t now_ms) {
  const attest::AttestedKeyFacts& f = verdict.key;
  AttestationPin pin;
  pin.processor_id = device_id;
  pin.key_sha256 = attest::key_fingerprint(f.key_spki);
  pin.key_spki = attest::base64_encode(f.key_spki);
  pin.challenge = hex(f.challenge);
  pin.verified_boot_key = hex(f.verified_boot_key);
  pin.boot_state = boot_text(f);
  pin.app_packages = f.app_packages;
  pin.app_digests = hex_all(f.app_digests);
  pin.evidence = boost::json::serialize(evidence);
  pin.pinned_ms = now_ms;
  pin.ecdh = offers_ecdh(evidence);
  return pin;
}

std::string DeviceAttestation::describe(const attest::AttestationVerdict& verdict) {
  if (verdict.attested) return "attested: " + verdict.reason;
  return std::string("not attested: ") + attest::refusal_name(verdict.refusal) + ": " + verdict.reason;
}

}  // namespace cellserve::fleet
