#include "fleet/crypto/hmac.h"

#include <sodium.h>

#include "fleet/crypto/identity.h"

namespace cellserve::fleet {

std::string random_hmac_key() {
  std::string key(crypto_auth_hmacsha256_KEYBYTES, '\0');
  (void)sodium_ready();
  randombytes_buf(key.data(), key.size());
  return key;
}

std::string hmac_sha256_hex(std::string_view key, std::string_view message) {
  (void)sodium_ready();
  crypto_auth_hmacsha256_state state;
  crypto_auth_hmacsha256_init(&state, reinterpret_cast<const unsigned char*>(key.data()), key.size());
  crypto_auth_hmacsha256_update(&state, reinterpret_cast<const unsigned char*>(message.data()), message.size());
  unsigned char mac[crypto_auth_hmacsha256_BYTES];
  crypto_auth_hmacsha256_final(&state, mac);
  return to_hex(mac, sizeof mac);
}

}  // namespace cellserve::fleet
