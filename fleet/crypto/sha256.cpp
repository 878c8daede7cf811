#include "fleet/crypto/sha256.h"

#include <fcntl.h>
#include <sodium/core.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace cellserve::fleet {
namespace {

// libsodium asks for sodium_init() before first use; it is idempotent and thread-safe.
void init_sodium_once() {
  static const int result = sodium_init();
  (void)result;
}

}  // namespace

Sha256::Sha256() {
  init_sodium_once();
  crypto_hash_sha256_init(&state_);
}

void Sha256::update(std::string_view data) { update(data.data(), data.size()); }

void Sha256::update(const void* data, size_t size) {
  if (size == 0) return;
  crypto_hash_sha256_update(&state_, static_cast<const unsigned char*>(data), size);
}

std::string Sha256::hex_digest() const {
  crypto_hash_sha256_state copy = state_;  // final() destroys the state: finish a copy
  unsigned char digest[crypto_hash_sha256_BYTES];
  crypto_hash_sha256_final(&copy, digest);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * sizeof(digest));
  for (const unsigned char b : digest) {
    out.push_back(kHex[b >> 4]);
    out.push_back(kHex[b & 15]);
  }
  return out;
}

std::string sha256_hex(std::string_view data) {
  Sha256 h;
  h.update(data);
  return h.hex_digest();
}

Result<std::string> sha256_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) return Status::not_found(path + ": no such file");
    return Status::internal(path + ": " + std::strerror(err));
  }
  Sha256 hash;
  std::vector<char> buf(1 << 20);
  for (;;) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      return Status::internal(path + ": read failed: " + std::strerror(err));
    }
    hash.update(buf.data(), static_cast<size_t>(n));
  }
  ::close(fd);
  return hash.hex_digest();
}

bool is_sha256_hex(std::string_view hex) {
  if (hex.size() != 64) return false;
  for (const char c : hex) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) return false;
  }
  return true;
}

}  // namespace cellserve::fleet
