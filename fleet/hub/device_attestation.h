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
  std::string roots_file;                 // "" : Google's roots
  std::string status_source;              // URL or file; "" : no status list
  std::string scratch_path;               // where a URL's body is downloaded
  int min_patch = 0;                      // YYYYMM; 0: none
  std::vector<std::string> allowed_apps;  // --attestation-app PACKAGE[:DIGEST]; empty: any app
};

// What one registration presented: the evidence (the agent's AgentInfo::attestation; null: none),
// and the tunnel it came through.
struct AttestationClaim {
  boost::json::value evidence;
  std::string nonce_hex;           // the hub's challenge the tunnel redeemed
  std::string device_id;           // the agent's Ed25519 key, hex
  std::string origin;              // X-Cellserve-Origin of the handshake
  std::string attested_signature;  // X-Cellserve-Attested-Signature (base64; "" : none)
};

class DeviceAttestation {
 public:
  // Errors name the file or flag (a hub with a bad attestation configuration does not start);
  // the status list is fetched once here, and must be.
  static Result<std::unique_ptr<DeviceAttestation>> create(const AttestationConfig& config, int64_t now_ms);

  // The verdict on `claim` at time `now`. The key's attestation challenge must name this device:
  // attestation_challenge(nonce, device key) for this registration's nonce, or for the earlier
  // one the agent says the key was made at (evidence "key_nonce", kept by the agent since a
  // keystore makes its key once), and then the key must also have signed this very handshake
  // (attest::attested_tunnel_digest), which makes it fresh. So evidence replayed by another
  // device, or made for another device's key, is refused as wrong_challenge. With `pin` (the
  // device is pinned and no change was approved) the key, boot key and app must be the pinned
  // ones; others are refused as key_changed.
  attest::AttestationVerdict check(const AttestationClaim& claim, std::time_t now, const AttestationPin* pin);

  // The evidence that made `pin`, judged again by the policy now (status list, patch minimum,
  // apps): how a connected device is re-judged when the status list changes.
  attest::AttestationVerdict rejudge(const AttestationPin& pin, std::time_t now);

  // The pin for `device_id`, whose registration `verdict` attested `evidence`.
  static AttestationPin pin_of(const std::string& device_id, const attest::AttestationVerdict& verdict,
                               const boost::json::value& evidence, int64_t now_ms);

  // Whether the agent says its helper offers `ecdh` (evidence "ecdh": true).
  static bool offers_ecdh(const boost::json::value& evidence);

  // "attested: TEE, ..." or "not attested: <name>: <reason>", as recorded for the processor.
  static std::string describe(const attest::AttestationVerdict& verdict);

  // The status list feed; nullptr when none is configured.
  AttestationStatusFeed* status_feed() { return status_.get(); }

 private:
  attest::AttestationPolicy policy(std::shared_ptr<const attest::RevocationList>* hold) const;
  attest::AttestationVerdict verify(const attest::AttestationEvidence& evidence, const std::string& challenge,
                                    std::time_t now) const;
  // The verdict for a key attested at the earlier registration the evidence's "key_nonce" names
  // (which must then have signed this handshake); `fresh` when there is none or it is not that.
  attest::AttestationVerdict check_earlier_key(const attest::AttestationEvidence& evidence,
                                               const AttestationClaim& claim, std::time_t now,
                                               const attest::AttestationVerdict& fresh) const;

  std::vector<std::string> roots_;
  int min_patch_ = 0;
  std::vector<attest::AllowedApp> apps_;
  std::unique_ptr<AttestationStatusFeed> status_;
};

}  // namespace cellserve::fleet
