// "<dest>.partial": the file a download appends to, with the SHA-256 of everything in it, so a
// finished download is verified without reading it again.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "base/status.h"
#include "fleet/crypto/sha256.h"

namespace cellserve::fleet {

// Not thread-safe. Owns its file descriptor.
class PartialFile {
 public:
  // Opens (creating, mode 0644) `path` for appending, takes an exclusive flock(2) on it (held
  // until destruction), and hashes what it already holds. Unavailable when another download
  // holds the lock, Internal on an I/O error.
  static Result<std::unique_ptr<PartialFile>> open(const std::string& path);

  ~PartialFile();
  PartialFile(const PartialFile&) = delete;
  PartialFile& operator=(const PartialFile&) = delete;

  // Appends `size` bytes. ResourceExhausted when the disk is full, Internal for other errors.
  Status append(const char* data, size_t size);
  // Empties the file (the download starts over).
  Status truncate();
  Status sync();
  // Bytes an unprivileged user may still write on the file's filesystem; nullopt when unknown.
  std::optional<uint64_t> free_space() const;

  uint64_t size() const { return size_; }
  const Sha256& hash() const { return hash_; }  // of bytes [0, size())

 private:
  PartialFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}

  std::string path_;
  int fd_;
  Sha256 hash_;
  uint64_t size_ = 0;
};

}  // namespace cellserve::fleet
