// The attestation status list the hub judges devices by (--attestation-status URL|FILE): fetched
// at start and then every --attestation-status-refresh by the Supervisor, which re-judges every
// connected attested device when the list changed. A failed fetch keeps the last good copy (its
// age is shown in /metrics and `deployments show`) and is reported.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "base/status.h"
#include "fleet/attest/revocation_list.h"

namespace cellserve::fleet {

// A URL fetch gives up after this long (the body is at most attest::kMaxRevocationListBytes).
inline constexpr std::chrono::seconds kStatusFetchDeadline{60};

class AttestationStatusFeed {
 public:
  // `source`: an http:// or https:// URL, or a file path. `scratch_path`: where a URL's body is
  // downloaded before it is parsed (replaced at each fetch).
  AttestationStatusFeed(std::string source, std::string scratch_path);

  // Fetches and parses the list now. True when it differs from the list in use (which it now
  // replaces), false when it is the same; an error when the fetch or the parse failed, in which
  // case the list in use stays (last_error() keeps the reason). Thread-safe; one call at a time
  // does the fetching (a second waits).
  Result<bool> refresh(int64_t now_ms);

  // The list in use; nullptr before the first successful fetch. Thread-safe.
  std::shared_ptr<const attest::RevocationList> current() const;
  // When the list in use was last fetched successfully (Unix ms; 0: never). Thread-safe.
  int64_t last_good_ms() const;
  // OK, or why the latest fetch failed. Thread-safe.
  Status last_error() const;
  const std::string& source() const { return source_; }
  // Prometheus lines: the list's age at `now_ms`, whether the latest fetch failed, its entries.
  std::string prometheus_text(int64_t now_ms) const;
  // Ends a fetch in progress (and every later one) at once: the hub is stopping. Thread-safe.
  void cancel() { cancelled_ = true; }
  bool is_url() const;

 private:
  // The body: read from the file, or downloaded; at most kMaxRevocationListBytes.
  Result<std::string> fetch() const;

  std::atomic<bool> cancelled_{false};
  const std::string source_;
  const std::string scratch_path_;
  std::mutex fetch_mu_;  // one fetch at a time
  mutable std::mutex mu_;
  std::shared_ptr<const attest::RevocationList> list_;  // guarded by mu_
  std::string body_sha256_;                             // guarded by mu_: of the list in use
  int64_t last_good_ms_ = 0;                            // guarded by mu_
  Status last_error_;                                   // guarded by mu_
};

}  // namespace cellserve::fleet
