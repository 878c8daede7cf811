// The hub's secrets at rest: deployment [env] values are stored encrypted (libsodium secretbox,
// XSalsa20-Poly1305) under a master key kept in its own file beside hub.db, mode 0600, created
// on first start. A copy of hub.db alone reveals no secret.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"

namespace cellserve::fleet {

class SecretBox {
 public:
  // The key in `path` (created when absent). PermissionDenied when others can read the file,
  // DataLoss when it is not a key file.
  static Result<SecretBox> open_or_create(const std::string& path);
  // The key in `path`, which must exist (a cluster key file: several hubs share it, so none may
  // make its own). NotFound when absent; otherwise as open_or_create.
  static Result<SecretBox> open_existing(const std::string& path);
  // Writes a fresh random key file at `path` (mode 0600); fails when anything is there already.
  static Status create(const std::string& path);
  SecretBox() = default;
  ~SecretBox();  // zeroes the key
  SecretBox(const SecretBox&) = default;
  SecretBox& operator=(const SecretBox&) = default;
  SecretBox(SecretBox&&) = default;
  SecretBox& operator=(SecretBox&&) = default;

  // "enc1:" + hex(nonce ‖ ciphertext): a fresh random nonce per call.
  std::string seal(std::string_view plain) const;
  // The plain text of a seal() result; DataLoss when it is not one of this key's.
  Result<std::string> open(std::string_view sealed) const;
  static bool is_sealed(std::string_view value);
  // A secret derived from the key for `purpose` (HMAC-SHA-256, 64 hex digits): stable across
  // restarts, never stored, and different for every purpose (each deployment's replica key).
  std::string derive(std::string_view purpose) const;
  // The raw key bytes (32), for what derives its own keys from the cluster key (hub-to-hub
  // authentication). Never logged, stored or sent.
  const std::string& key_bytes() const { return key_; }

 private:
  // The key in `path`: nullopt when the file does not exist.
  static Result<std::optional<SecretBox>> read_key_file(const std::string& path);

  std::string key_;
};

}  // namespace cellserve::fleet
