#include "fleet/crypto/secret_box.h"

#include <sodium.h>

#include "fleet/crypto/hmac.h"
#include "fleet/crypto/identity.h"
#include "fleet/crypto/private_file.h"

namespace cellserve::fleet {
namespace {

constexpr std::string_view kFileHeader = "cellserve-secrets-key-v1 ";
constexpr std::string_view kPrefix = "enc1:";

}  // namespace

SecretBox::~SecretBox() { wipe(key_); }

Result<std::optional<SecretBox>> SecretBox::read_key_file(const std::string& path) {
  if (!sodium_ready()) return Status::internal("libsodium could not be initialised");
  CS_ASSIGN_OR_RETURN(std::optional<std::string> stored, read_private_file(path, "secrets key", 128));
  if (!stored) return std::optional<SecretBox>();
  std::string key(crypto_secretbox_KEYBYTES, '\0');
  const std::string_view text(*stored);
  const bool parsed =
      text.starts_with(kFileHeader) && from_hex(text.substr(kFileHeader.size(), 2 * crypto_secretbox_KEYBYTES),
                                                reinterpret_cast<unsigned char*>(key.data()), key.size());
  wipe(*stored);
  if (!parsed) {
    wipe(key);
    return Status::data_loss(path + ": not a cellserve secrets key file");
  }
  SecretBox box;
  box.key_ = std::move(key);
  return std::optional<SecretBox>(std::move(box));
}

Result<SecretBox> SecretBox::open_or_create(const std::string& path) {
  CS_ASSIGN_OR_RETURN(std::optional<SecretBox> stored, read_key_file(path));
  if (stored) return std::move(*stored);
  CS_RETURN_IF_ERROR(create(path));
  CS_ASSIGN_OR_RETURN(stored, read_key_file(path));
  if (!stored) return Status::internal(path + ": vanished after it was written");
  return std::move(*stored);
}

Result<SecretBox> SecretBox::open_existing(const std::string& path) {
  CS_ASSIGN_OR_RETURN(std::optional<SecretBox> stored, read_key_file(path));
  if (!stored) return Status::not_found(path + ": no such key file (make one with `cellserve hub cluster-key FILE`)");
  return std::move(*stored);
}

Status SecretBox::create(const std::string& path) {
  if (!sodium_ready()) return Status::internal("libsodium could not be initialised");
  std::string key(crypto_secretbox_KEYBYTES, '\0');
  crypto_secretbox_keygen(reinterpret_cast<unsigned char*>(key.data()));
  std::string text =
      std::string(kFileHeader) + to_hex(reinterpret_cast<const unsigned char*>(key.data()), key.size()) + "\n";
  wipe(key);
  const Status written = write_private_file(path, text);
  wipe(text);
  return written;
}

std::string SecretBox::derive(std::string_view purpose) const {
  return hmac_sha256_hex(key_, std::string("cellserve-derived-v1\n") + std::string(purpose));
}

bool SecretBox::is_sealed(std::string_view value) { return value.starts_with(kPrefix); }

std::string SecretBox::seal(std::string_view plain) const {
  std::string out(crypto_secretbox_NONCEBYTES + crypto_secretbox_MACBYTES + plain.size(), '\0');
  auto* bytes = reinterpret_cast<unsigned char*>(out.data());
  randombytes_buf(bytes, crypto_secretbox_NONCEBYTES);
  crypto_secretbox_easy(bytes + crypto_secretbox_NONCEBYTES, reinterpret_cast<const unsigned char*>(plain.data()),
                        plain.size(), bytes, reinterpret_cast<const unsigned char*>(key_.data()));
  return std::string(kPrefix) + to_hex(bytes, out.size());
}

Result<std::string> SecretBox::open(std::string_view sealed) const {
  const auto bad = [] { return Status::data_loss("a stored secret does not open with this hub's secrets key"); };
  if (!sealed.starts_with(kPrefix)) return bad();
  const std::string_view hex = sealed.substr(kPrefix.size());
  if (hex.size() % 2 != 0 || hex.size() / 2 < crypto_secretbox_NONCEBYTES + crypto_secretbox_MACBYTES) return bad();
  std::string raw(hex.size() / 2, '\0');
  auto* bytes = reinterpret_cast<unsigned char*>(raw.data());
  if (!from_hex(hex, bytes, raw.size())) return bad();
  std::string plain(raw.size() - crypto_secretbox_NONCEBYTES - crypto_secretbox_MACBYTES, '\0');
  if (crypto_secretbox_open_easy(reinterpret_cast<unsigned char*>(plain.data()), bytes + crypto_secretbox_NONCEBYTES,
                                 raw.size() - crypto_secretbox_NONCEBYTES, bytes,
                                 reinterpret_cast<const unsigned char*>(key_.data())) != 0) {
    return bad();
  }
  return plain;
}

}  // namespace cellserve::fleet
