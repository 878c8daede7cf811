// HMAC-SHA-256 (libsodium's crypto_auth_hmacsha256) for the hub's own short-lived tokens.
#pragma once

#include <string>
#include <string_view>

namespace cellserve::fleet {

// A fresh random key for hmac_sha256_hex (32 bytes, as raw bytes in a string).
std::string random_hmac_key();

// The HMAC-SHA-256 of `message` under `key`, as 64 lower-case hex digits.
std::string hmac_sha256_hex(std::string_view key, std::string_view message);

}  // namespace cellserve::fleet
