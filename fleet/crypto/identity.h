// A device's identity: an Ed25519 key pair (libsodium). The public key, in hex, is the device's id
// at the hub; the agent proves it holds the secret key by signing the hub's one-time challenge.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"

namespace cellserve::fleet {

class Identity {
 public:
  // Reads the key pair from `path`, or creates one there (file mode 0600, written to a temporary
  // file and renamed, so a crash never leaves half a key). PermissionDenied when an existing file
  // is readable by group or others — a copied key is a stolen identity.
  static Result<Identity> load_or_create(const std::string& path);
  // A fresh key pair that lives only in memory (tests).
  static Identity generate();
  Identity() = default;
  ~Identity();  // zeroes the secret key
  Identity(const Identity&) = default;
  Identity& operator=(const Identity&) = default;
  Identity(Identity&&) = default;  // a copy: the source zeroes its own at destruction
  Identity& operator=(Identity&&) = default;

  const std::string& id() const { return id_; }  // the public key, 64 lower-case hex digits
  // The detached signature of `message`, 128 hex digits.
  std::string sign(std::string_view message) const;
  // The plain text of a seal_to_device() result addressed to this identity. DataLoss when it is
  // not hex, was sealed to another device, or was altered.
  Result<std::string> open_sealed(std::string_view sealed_hex) const;

 private:
  std::array<unsigned char, 64> secret_{};  // libsodium's secret key: seed followed by public key
  std::string id_;
};

// Zeroes `secret`'s bytes where the compiler cannot elide it (sodium_memzero), then clears it:
// for key material held in a std::string once it is used.
void wipe(std::string& secret);

// True when `signature_hex` is `public_key_hex`'s valid signature of `message`; false for any
// malformed input.
bool verify_signature(std::string_view public_key_hex, std::string_view message, std::string_view signature_hex);

// `plain` sealed to the device whose id is `device_id`: a libsodium sealed box (an ephemeral
// X25519 key, XSalsa20-Poly1305) to the X25519 form of its Ed25519 identity key, as hex. Only
// that device's secret key opens it; the hub keeps no key that could. InvalidArgument when
// `device_id` is not a public key.
Result<std::string> seal_to_device(std::string_view device_id, std::string_view plain);

// The one spelling of a device id: its public key's 64 lower-case hex digits. Any other spelling
// of the same key (upper-case hex) maps to it, so one key can never register twice; nullopt when
// `id` is not a public key in hex. Every lookup by id uses this form.
std::optional<std::string> canonical_identity(std::string_view id);

// Lower-case hex of `bytes`, and back (nullopt-like empty + false on bad input).
std::string to_hex(const unsigned char* bytes, size_t size);
bool from_hex(std::string_view hex, unsigned char* out, size_t size);

// `size` random bytes from the OS generator, as hex (challenges, tokens).
std::string random_hex(size_t size);

// Initialises libsodium once; false only when the library cannot start (no entropy source).
bool sodium_ready();

}  // namespace cellserve::fleet
