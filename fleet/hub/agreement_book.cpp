#include "fleet/hub/agreement_book.h"

#include <bit>
#include <cstdio>

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
  const int64_t filled = a.recent_count >= 63 ? kWindowMask : ((int64_t{1} << a.recent_count) - 1);
  return std::popcount(static_cast<uint64_t>(a.recent_bits & filled & kWindowMask));
}

double agreement_rate(const DeviceAgreement& a) {
  const int64_t decided = a.agreed + a.lost;
  return decided == 0 ? 1.0 : static_cast<double>(a.agreed) / static_cast<double>(decided);
}

std::string quarantine_reason(const DeviceAgreement& a) {
  if (a.recent_count < kMinDecided) return "";
  const int agreed = recent_agreed(a);
  if (agreed >= kMinAgreementRate * a.recent_count) return "";
  char text[160];
  std::snprintf(text, sizeof(text), "agreed in %d of its last %d decided checks (below %.0f%%)", agreed,
                a.recent_count, kMinAgreementRate * 100);
  return text;
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
