#include "fleet/hub/agreement_book.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <sstream>

#include <boost/json.hpp>

#include "net/prometheus.h"

namespace cellserve::fleet {
namespace {

constexpr int64_t kWindowMask = (int64_t{1} << kAgreementWindow) - 1;

}  // namespace

DeviceAgreement with_outcome(DeviceAgreement a, CheckOutcome outcome) {
  ++a.checks;
  if (outcome == CheckOutcome::Unresolved) return a;
  const bool agreed = outcome == CheckOutcome::Agreed;
  ++(agreed ? a.agreed : a.lost);
  a.recent_bits = ((a.recent_bits << 1) | (agreed ? 1 : 0)) & kWindowMask;
  if (a.recent_count < kAgreementWindow) ++a.recent_count;
  return a;
}

int recent_agreed(const DeviceAgreement& a) {
  const int64_t filled = (int64_t{1} << std::clamp(a.recent_count, 0, kAgreementWindow)) - 1;
  return std::popcount(static_cast<uint64_t>(a.recent_bits & filled & kWindowMask));
}

double agreement_rate(const DeviceAgreement& a) {
  const int64_t decided = a.agreed + a.lost;
  return decided == 0 ? 1.0 : static_cast<double>(a.agreed) / static_cast<double>(decided);
}

std::string quarantine_reason(const DeviceAgreement& a) {
  if (a.recent_count < kMinDecided) return "";
  const int agreed = recent_agreed(a);
  if (agreed * 100 >= kMinAgreementPercent * a.recent_count) return "";
  char text[160];
  std::snprintf(text, sizeof(text), "agreed in %d of its last %d decided checks (below %d%%)", agreed, a.recent_count,
                kMinAgreementPercent);
  return text;
}

boost::json::object agreement_json(const DeviceAgreement& a) {
  return boost::json::object{{"checks", a.checks},
                             {"agreed", a.agreed},
                             {"lost", a.lost},
                             {"unresolved", a.checks - a.agreed - a.lost},
                             {"rate", agreement_rate(a)},
                             {"recent_agreed", recent_agreed(a)},
                             {"recent_decided", a.recent_count},
                             {"quarantined", a.quarantined},
                             {"reason", a.reason},
                             {"changed_ms", a.changed_ms}};
}

std::string agreement_metrics_text(const std::map<std::string, DeviceAgreement>& records) {
  std::ostringstream out;
  out << "# HELP cellserve_hub_device_agreement Share of a device's decided spot checks and canaries it agreed in.\n"
      << "# TYPE cellserve_hub_device_agreement gauge\n";
  for (const auto& [id, a] : records) {
    out << "cellserve_hub_device_agreement{device=\"" << net::prometheus_label(id.substr(0, 16)) << "\"} "
        << agreement_rate(a) << '\n';
  }
  out << "# HELP cellserve_hub_device_quarantined 1 while the device is quarantined (no traffic).\n"
      << "# TYPE cellserve_hub_device_quarantined gauge\n";
  for (const auto& [id, a] : records) {
    out << "cellserve_hub_device_quarantined{device=\"" << net::prometheus_label(id.substr(0, 16)) << "\"} "
        << (a.quarantined ? 1 : 0) << '\n';
  }
  return out.str();
}

void AgreementBook::load(const std::vector<DeviceAgreement>& records) {
  std::lock_guard lock(mu_);
  for (const DeviceAgreement& a : records) records_[a.processor_id] = a;
}

AgreementBook::Recorded AgreementBook::record(const std::string& device, CheckOutcome outcome, int64_t now_ms) {
  std::lock_guard lock(mu_);
  DeviceAgreement& a = records_[device];
  a.processor_id = device;
  a = with_outcome(a, outcome);
  a.changed_ms = now_ms;
  Recorded r;
  if (!a.quarantined) {
    a.reason = quarantine_reason(a);
    a.quarantined = !a.reason.empty();
    r.quarantined_now = a.quarantined;
  }
  r.record = a;
  return r;
}

DeviceAgreement AgreementBook::release(const std::string& device, int64_t now_ms) {
  std::lock_guard lock(mu_);
  DeviceAgreement fresh;
  fresh.processor_id = device;
  fresh.changed_ms = now_ms;
  records_[device] = fresh;
  return fresh;
}

bool AgreementBook::quarantined(const std::string& device) const {
  std::lock_guard lock(mu_);
  const auto it = records_.find(device);
  return it != records_.end() && it->second.quarantined;
}

std::optional<DeviceAgreement> AgreementBook::get(const std::string& device) const {
  std::lock_guard lock(mu_);
  const auto it = records_.find(device);
  if (it == records_.end()) return std::nullopt;
  return it->second;
}

std::map<std::string, DeviceAgreement> AgreementBook::all() const {
  std::lock_guard lock(mu_);
  return records_;
}

}  // namespace cellserve::fleet
