// Google's attestation certificate status list (https://android.googleapis.com/attestation/status),
// read from a local copy the operator keeps fresh:
//
//   {"entries": {"<serial, lower-case hex, no leading zeros>":
//                  {"status": "REVOKED" | "SUSPENDED",
//                   "reason": "UNSPECIFIED" | "KEY_COMPROMISE" | "CA_COMPROMISE" | "SUPERSEDED" |
//                             "SOFTWARE_FLAW", "comment": "...", "expires": "..."}, ...}}
//
// A certificate whose serial has an entry, whatever its status, is refused.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <ctime>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "base/status.h"

namespace cellserve::fleet::attest {

// Larger than Google's list will plausibly grow (tens of KiB today); a bigger file is refused.
inline constexpr size_t kMaxRevocationListBytes = 16 * 1024 * 1024;

struct RevocationEntry {
  std::string status;  // "REVOKED", "SUSPENDED", or whatever newer value Google adds
  std::string reason;  // may be empty
};

// The one spelling of a serial in the list: lower-case hex without leading zeros ("0" for zero).
// nullopt when `serial_hex` is empty or not hex.
std::optional<std::string> normalize_serial(std::string_view serial_hex);

// An immutable status list. Thread-safe for concurrent lookups.
class RevocationList {
 public:
  RevocationList() = default;  // empty: nothing revoked

  // InvalidArgument, with the JSON path, for malformed JSON, a missing or non-object "entries",
  // a key that is not a hex serial, a non-object entry, or a non-string "status" / "reason".
  static Result<RevocationList> parse(std::string_view json_text);
  // Reads and parses `path`; NotFound / Internal for I/O, ResourceExhausted above
  // kMaxRevocationListBytes. Errors name the file.
  static Result<RevocationList> load(const std::string& path);

  // The entry for `serial_hex` (any case, leading zeros allowed), or nullptr.
  const RevocationEntry* find(std::string_view serial_hex) const;
  size_t size() const { return entries_.size(); }

 private:
  std::unordered_map<std::string, RevocationEntry> entries_;  // by normalize_serial()
};

// A status list file the hub re-reads whenever its size or modification time changes, so an
// operator (or a cron job fetching Google's list) can replace it without a restart.
// Thread-safe.
class RevocationListFile {
 public:
  explicit RevocationListFile(std::string path) : path_(std::move(path)) {}

  // The current list, re-read first when the file changed since the last read. When a re-read
  // fails (a half-written file, bad JSON) the previous list stays in use and the failure is kept
  // in last_error(); the call fails only while no list has ever been read successfully.
  // Replace the file atomically (write a temporary file, then rename) to avoid the window.
  Result<std::shared_ptr<const RevocationList>> current();

  // OK, or why the latest re-read failed.
  Status last_error() const;

 private:
  std::string path_;
  mutable std::mutex mu_;
  std::shared_ptr<const RevocationList> list_;  // guarded by mu_
  off_t size_ = -1;                             // guarded by mu_: the file as last read (or tried)
  int64_t mtime_ns_ = -1;                       // guarded by mu_
  Status last_error_;                           // guarded by mu_
};

}  // namespace cellserve::fleet::attest
