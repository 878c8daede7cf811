// SHA-256 (FIPS 180-4) through libsodium, as lower-case hex: how downloads are verified.
#pragma once

#include <sodium/crypto_hash_sha256.h>

#include <string>
#include <string_view>

#include "base/status.h"

namespace cellserve::fleet {

// A streaming SHA-256. Not thread-safe; copyable (a copy continues independently).
class Sha256 {
 public:
  Sha256();

  // Adds `data` to the hashed message.
  void update(std::string_view data);
  void update(const void* data, size_t size);

  // The digest of everything added so far as 64 lower-case hex digits. Does not end the
  // stream: more update() calls may follow.
  std::string hex_digest() const;

 private:
  crypto_hash_sha256_state state_;
};

// The SHA-256 of the file at `path` as lower-case hex, read in 1 MiB pieces. NotFound when the
// file does not exist, Internal for other I/O errors.
Result<std::string> sha256_file(const std::string& path);

// The SHA-256 of `data` as lower-case hex.
std::string sha256_hex(std::string_view data);

// True when `hex` is 64 hex digits (either case).
bool is_sha256_hex(std::string_view hex);

}  // namespace cellserve::fleet
