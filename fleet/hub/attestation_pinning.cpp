// An attested device is its attested key (docs/attestation.md, "Pinning"): the first successful
// attestation pins the device to the key, its boot key and its app; every later tunnel handshake
// must be signed by that key, and another key waits for the operator (approve-key). And
// revocation is live: the status list is fetched on a schedule, and a change re-judges every
// connected attested device at once.
#include <boost/json.hpp>

#include "fleet/attest/attested_key.h"
#include "fleet/attest/base64.h"
#include "fleet/attest/evidence.h"
#include "fleet/hub/supervisor.h"

namespace cellserve::fleet {
namespace {

// What is wrong with the handshake's attested-key signature ("" : it verifies with the pin).
std::string handshake_problem(const AttestationPin& pin, const std::string& origin, const std::string& challenge,
                              const std::string& id, const std::string& signature_b64) {
  if (signature_b64.empty()) return "no signature by that key (X-Cellserve-Attested-Signature)";
  // Base64 of at most kMaxEvidenceSignatureBytes: checked before decoding a peer's bytes.
  if (signature_b64.size() > (attest::kMaxEvidenceSignatureBytes + 2) / 3 * 4) return "an oversized signature";
  const std::optional<std::string> signature = attest::base64_decode(signature_b64);
  if (!signature) return "a signature that is not base64";
  const std::optional<std::string> spki = attest::base64_decode(pin.key_spki);
  if (!spki) return "a pin whose key does not decode";
  const std::string why =
      attest::signature_problem(*spki, attest::attested_tunnel_digest(origin, challenge, id), *signature);
  return why.empty() ? std::string() : "a signature that does not verify (" + why + ")";
}

}  // namespace

Status Supervisor::check_attested_handshake(const std::string& id, const std::string& origin,
                                            const std::string& challenge, const std::string& attested_signature) {
  auto pin = state_.store->attestation_pin(id);
  if (!pin.ok()) return pin.status();
  if (!pin->has_value() || (*pin)->change_approved) return {};
  AttestationPin held = **pin;
  const std::string problem = handshake_problem(held, origin, challenge, id, attested_signature);
  if (problem.empty()) return {};
  const std::string reason = "this device is pinned to attested key " + held.key_sha256.substr(0, 16) +
                             " and its handshake carried " + problem +
                             "; if its key changed for a good reason, the operator approves the change: cellserve "
                             "fleet approve-key " +
                             id;
  state_.log("tunnel refused: agent " + id.substr(0, 16) + ": " + reason);
  if (held.held != reason) {
    held.held = reason;
    state_.saved(state_.store->put_attestation_pin(held), "attestation pin " + id.substr(0, 16));
  }
  return Status(StatusCode::Unauthenticated, reason);
}

void Supervisor::record_pin(const std::string& id, const attest::AttestationVerdict& verdict,
                            const boost::json::value& evidence, const std::optional<AttestationPin>& pin, int64_t now) {
  const std::string who = "agent " + id.substr(0, 16);
  if (verdict.attested && (!pin || pin->change_approved)) {
    const AttestationPin fresh = DeviceAttestation::pin_of(id, verdict, evidence, now);
    if (state_.saved(state_.store->put_attestation_pin(fresh), "attestation pin " + id.substr(0, 16))) {
      state_.log(who + " pinned to attested key " + fresh.key_sha256.substr(0, 16) + " (" + fresh.boot_state +
                 (fresh.app_packages.empty() ? "" : ", app " + fresh.app_packages[0]) + ")");
    }
    return;
  }
  if (!pin) return;
  AttestationPin updated = *pin;
  updated.held = verdict.refusal == attest::Refusal::KeyChanged ? verdict.reason
                 : verdict.attested                             ? std::string()
                                                                : pin->held;
  if (verdict.attested) updated.ecdh = DeviceAttestation::offers_ecdh(evidence);
  if (updated.held == pin->held && updated.ecdh == pin->ecdh) return;
  state_.saved(state_.store->put_attestation_pin(updated), "attestation pin " + id.substr(0, 16));
}

void Supervisor::rejudge_attested(const std::string& why) {
  auto pins = state_.store->attestation_pins();
  if (!pins.ok()) return state_.log("attestation: cannot re-judge devices: " + pins.status().message());
  const int64_t now = state_.now_ms();
  int failed = 0;
  std::lock_guard lock(state_.state_mu);
  for (const AttestationPin& pin : *pins) {
    if (!state_.links.find(pin.processor_id)) continue;  // the others are judged when they register
    auto p = state_.store->processor(pin.processor_id);
    if (!p.ok() || !p->has_value() || !(*p)->attested) continue;
    const attest::AttestationVerdict v = state_.attestation->rejudge(pin, static_cast<std::time_t>(now / 1000));
    if (v.attested) continue;
    Processor updated = **p;
    updated.attested = false;
    updated.attestation = DeviceAttestation::describe(v);
    if (!state_.saved(state_.store->upsert_processor(updated), "processor " + pin.processor_id.substr(0, 16))) continue;
    state_.log("agent " + updated.name + " (" + pin.processor_id.substr(0, 16) + ") " + updated.attestation + " (" +
               why + ", re-judged without reconnecting)");
    evict_unattested(pin.processor_id, updated.attestation, now);
    ++failed;
  }
  if (failed > 0) state_.request_reconcile();
}

void Supervisor::status_loop() {
  AttestationStatusFeed* feed = state_.attestation->status_feed();
  while (status_wakeup_.wait(state_.options.attestation_status_refresh)) {
    const Result<bool> changed = feed->refresh(state_.now_ms());
    if (!changed.ok()) {
      state_.log("attestation status list not refreshed, the copy fetched " +
                 std::to_string((state_.now_ms() - feed->last_good_ms()) / 1000) +
                 " s ago stays in use: " + changed.status().message());
      continue;
    }
    if (*changed) {
      state_.log("attestation status list changed (" + std::to_string(feed->current()->size()) +
                 " entries): re-judging every connected attested device");
      rejudge_attested("status list changed");
    }
  }
}

}  // namespace cellserve::fleet
