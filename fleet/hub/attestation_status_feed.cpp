#include "fleet/hub/attestation_status_feed.h"

#include <unistd.h>

#include <fstream>

#include "fleet/crypto/sha256.h"
#include "fleet/download/downloader.h"

namespace cellserve::fleet {
namespace {

using Steady = std::chrono::steady_clock;

// At most attest::kMaxRevocationListBytes of `path`; ResourceExhausted beyond.
Result<std::string> read_bounded(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::not_found(path + ": cannot read");
  std::string text(attest::kMaxRevocationListBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  if (text.size() > attest::kMaxRevocationListBytes) {
    return Status::resource_exhausted(path + ": larger than " + std::to_string(attest::kMaxRevocationListBytes >> 20) +
                                      " MiB");
  }
  return text;
}

}  // namespace

AttestationStatusFeed::AttestationStatusFeed(std::string source, std::string scratch_path)
    : source_(std::move(source)), scratch_path_(std::move(scratch_path)) {}

bool AttestationStatusFeed::is_url() const { return source_.starts_with("http://") || source_.starts_with("https://"); }

Result<std::string> AttestationStatusFeed::fetch() const {
  if (!is_url()) return read_bounded(source_);
  ::unlink(scratch_path_.c_str());
  ::unlink((scratch_path_ + ".partial").c_str());
  DownloadRequest req;
  req.url = source_;
  req.dest_path = scratch_path_;
  req.max_attempts = 1;  // the next refresh is the retry
  req.stall_timeout = std::chrono::seconds(30);
  const Steady::time_point deadline = Steady::now() + kStatusFetchDeadline;
  bool too_large = false;
  req.progress = [&](uint64_t done, uint64_t total) {
    too_large = done > attest::kMaxRevocationListBytes || total > attest::kMaxRevocationListBytes;
    return !too_large && !cancelled_ && Steady::now() < deadline;
  };
  Result<DownloadResult> got = download_file(req);
  if (!got.ok()) {
    ::unlink((scratch_path_ + ".partial").c_str());
    if (too_large) {
      return Status::resource_exhausted("larger than " + std::to_string(attest::kMaxRevocationListBytes >> 20) +
                                        " MiB");
    }
    if (got.status().message() == "cancelled") {
      return Status::unavailable("no complete answer within " + std::to_string(kStatusFetchDeadline.count()) + " s");
    }
    return got.status();
  }
  return read_bounded(scratch_path_);
}

Result<bool> AttestationStatusFeed::refresh(int64_t now_ms) {
  std::lock_guard fetching(fetch_mu_);
  Result<std::string> body = fetch();
  Result<attest::RevocationList> parsed =
      body.ok() ? attest::RevocationList::parse(*body) : Result<attest::RevocationList>(body.status());
  std::lock_guard lock(mu_);
  if (!parsed.ok()) {
    last_error_ = Status(parsed.status().code(), source_ + ": " + parsed.status().message());
    return last_error_;
  }
  last_error_ = Status();
  last_good_ms_ = now_ms;
  const std::string sha = sha256_hex(*body);
  if (list_ && sha == body_sha256_) return false;
  list_ = std::make_shared<const attest::RevocationList>(std::move(parsed).value());
  body_sha256_ = sha;
  return true;
}

std::shared_ptr<const attest::RevocationList> AttestationStatusFeed::current() const {
  std::lock_guard lock(mu_);
  return list_;
}

int64_t AttestationStatusFeed::last_good_ms() const {
  std::lock_guard lock(mu_);
  return last_good_ms_;
}

Status AttestationStatusFeed::last_error() const {
  std::lock_guard lock(mu_);
  return last_error_;
}

std::string AttestationStatusFeed::prometheus_text(int64_t now_ms) const {
  std::lock_guard lock(mu_);
  return "# HELP cellserve_attestation_status_age_seconds Seconds since the attestation status list in use was "
         "fetched.\n# TYPE cellserve_attestation_status_age_seconds gauge\ncellserve_attestation_status_age_seconds " +
         std::to_string((now_ms - last_good_ms_) / 1000) +
         "\n# HELP cellserve_attestation_status_fetch_failing 1 while the latest fetch of the list failed.\n"
         "# TYPE cellserve_attestation_status_fetch_failing gauge\ncellserve_attestation_status_fetch_failing " +
         (last_error_.ok() ? "0" : "1") +
         "\n# HELP cellserve_attestation_status_entries Entries in the status list in use.\n"
         "# TYPE cellserve_attestation_status_entries gauge\ncellserve_attestation_status_entries " +
         std::to_string(list_ ? list_->size() : 0) + "\n";
}

}  // namespace cellserve::fleet
