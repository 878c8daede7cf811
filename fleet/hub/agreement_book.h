// Each device's record of spot checks and canaries (fleet/hub/spot_checks.h), and the rule that
// quarantines a device whose answers disagree with the other devices': a quarantined device gets
// no traffic at all (the deployment endpoint, replica addresses, batch lines) until the operator
// releases it (`cellserve fleet release ID`). docs/fleet.md, "Spot checks and canaries".
// Thread-safe; holds no I/O: the caller stores the records it returns.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <boost/json/object.hpp>

#include "fleet/store/records.h"

namespace cellserve::fleet {

// How one device's answer came out in one check.
enum class CheckOutcome {
  Agreed,      // it matched its pair's answer, the majority's, or the canary's expected answer
  Lost,        // it disagreed with the majority, or answered a canary wrong
  Unresolved,  // it disagreed and no majority was found: counted, not decided
};

// The quarantine rule: over the last kWindow decided outcomes (agreed or lost), once at least
// kMinDecided are in, a device with fewer than kMinAgreementPercent of them agreed is quarantined.
inline constexpr int kAgreementWindow = 20;
inline constexpr int kMinDecided = 5;
inline constexpr int kMinAgreementPercent = 80;  // whole numbers: 4 of 5 is exactly at the edge

// `a` after `outcome` (counts and window; the quarantine is left to quarantine_reason()).
DeviceAgreement with_outcome(DeviceAgreement a, CheckOutcome outcome);
// Why `a` falls below the rule ("" when it does not).
std::string quarantine_reason(const DeviceAgreement& a);
// Agreed of decided over the device's record (1 when none is decided).
double agreement_rate(const DeviceAgreement& a);
// Agreed of decided in the window.
int recent_agreed(const DeviceAgreement& a);

// A device's record as the API shows it (processors, deployments show): checks, agreed, lost,
// unresolved (disagreements no majority decided), rate, the window's figures, quarantined and why.
boost::json::object agreement_json(const DeviceAgreement& a);
// Per device: cellserve_hub_device_agreement (the rate) and cellserve_hub_device_quarantined,
// labelled with the id's first 16 hex digits.
std::string agreement_metrics_text(const std::map<std::string, DeviceAgreement>& records);

class AgreementBook {
 public:
  void load(const std::vector<DeviceAgreement>& records);

  // What record() did: the record after it, and whether this outcome quarantined the device.
  struct Recorded {
    DeviceAgreement record;
    bool quarantined_now = false;
  };
  Recorded record(const std::string& device, CheckOutcome outcome, int64_t now_ms);
  // The operator's release: a fresh record (the counts and window start again), not quarantined.
  DeviceAgreement release(const std::string& device, int64_t now_ms);

  bool quarantined(const std::string& device) const;
  std::optional<DeviceAgreement> get(const std::string& device) const;
  std::map<std::string, DeviceAgreement> all() const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, DeviceAgreement> records_;  // by processor id; guarded by mu_
};

}  // namespace cellserve::fleet
