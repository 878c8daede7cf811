// The hub's attestation check at each registration (docs/attestation.md): the trusted roots,
// patch minimum and allowed apps from HubOptions, the attestation status list (a feed the
// Supervisor refreshes), the verdict on what a device presented for the challenge its tunnel was
// opened with, and the pin that binds an attested device to its attested key.
#pragma once

#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include <boost/json/value.hpp>

#include "base/status.h"
#include "fleet/attest/attestation.h"
#include "fleet/hub/attestation_status_feed.h"
#include "fleet/store/records.h"

namespace cellserve::fleet {

struct AttestationConfig {
  std::string roots_file;     // "" : Google's roots
  std::string status_source;  // URL or file; "" : no status list
  std::string scratch_path;   // where a URL's body is downloaded
  int min_patch = 0;          // YYYYMM; 0: none
  std::vector<std::string> allowed_apps;  // --attestation-app PACKAGE[:DIGEST]; empty: any app
};

class DeviceAttestation {
 public:
  // Errors name the file or flag (a hub with a bad attestation configuration does not start);
  // the status list is fetched once here, and must be.
  static Result<std::unique_ptr<DeviceAttestation>> create(const AttestationConfig& config, int64_t now_ms);

  // The verdict on `evidence` (the agent's AgentInfo::attestation; null: none presented) from
  // the device `device_id` whose tunnel redeemed the hub's challenge `nonce_hex`.
  // Without `pin` (none yet, or a key change the operator approved) the key must carry
  // attestation_challenge(nonce, device key), so evidence made for another nonce (a replay) or
  // another device's key is refused as wrong_challenge. With `pin` the key must be the pinned
  // one, attested with the pinned challenge (its freshness came from the handshake the key
  // signed); another key, boot key or app is refused as key_changed.
  attest::AttestationVerdict check(const boost::json::value& evidence, const std::string& nonce_hex,
                                   const std::string& device_id, std::time_t now, const AttestationPin* pin);

  // The evidence that made `pin`, judged again by the policy now (status list, patch minimum,
  // apps): how a connected device is re-judged when the status list changes.
  attest::AttestationVerdict rejudge(const AttestationPin& pin, std::time_t now);

  // The pin for `device_id`, whose registration `verdict` attested `evidence`.
  static AttestationPin pin_of(const std::string& device_id, const attest::AttestationVerdict& verdict,
                               const boost::json::value& evidence, int64_t now_ms);

  // "attested: TEE, ..." or "not attested: <name>: <reason>", as recorded for the processor.
  static std::string describe(const attest::AttestationVerdict& verdict);

  // The status list feed; nullptr when none is configured.
  AttestationStatusFeed* status_feed() { return status_.get(); }

 private:
  attest::AttestationPolicy policy(std::shared_ptr<const attest::RevocationList>* hold) const;
  attest::AttestationVerdict verify(const attest::AttestationEvidence& evidence, const std::string& challenge,
                                    std::time_t now) const;

  std::vector<std::string> roots_;
  int min_patch_ = 0;
  std::vector<attest::AllowedApp> apps_;
  std::unique_ptr<AttestationStatusFeed> status_;
};

}  // namespace cellserve::fleet
