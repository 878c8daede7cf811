// The hub's attestation check at each registration (docs/attestation.md): the trusted roots and
// patch minimum from HubOptions, the attestation status list file (re-read when it changes), and
// the verdict on what a device presented for the challenge its tunnel was opened with.
#pragma once

#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include <boost/json/value.hpp>

#include "base/status.h"
#include "fleet/attest/attestation.h"

namespace cellserve::fleet {

class DeviceAttestation {
 public:
  // `roots_file` "" : Google's roots; `status_file` "" : no status list. Errors name the file
  // (a hub with a bad attestation configuration does not start).
  static Result<std::unique_ptr<DeviceAttestation>> create(const std::string& roots_file,
                                                           const std::string& status_file, int min_patch);

  // The verdict on `evidence` (the agent's AgentInfo::attestation; null: none presented) from
  // the device `device_id` whose tunnel redeemed the hub's challenge `nonce_hex`. The challenge
  // the key must carry binds both, so evidence made for another nonce (a replay) or another
  // device's key is refused as wrong_challenge.
  attest::AttestationVerdict check(const boost::json::value& evidence, const std::string& nonce_hex,
                                   const std::string& device_id, std::time_t now);

  // "attested: TEE, ..." or "not attested: <name>: <reason>", as recorded for the processor.
  static std::string describe(const attest::AttestationVerdict& verdict);

 private:
  std::vector<std::string> roots_;
  int min_patch_ = 0;
  std::unique_ptr<attest::RevocationListFile> status_;
};

}  // namespace cellserve::fleet
