#include "fleet/crypto/identity.h"

#include <sodium.h>

#include <vector>

#include "fleet/crypto/private_file.h"

namespace cellserve::fleet {
namespace {

constexpr std::string_view kHeader = "cellserve-ed25519-secret-key v1\n";

}  // namespace

bool sodium_ready() {
  static const bool ok = sodium_init() >= 0;
  return ok;
}

std::string to_hex(const unsigned char* bytes, size_t size) {
  std::string out(size * 2 + 1, '\0');
  sodium_bin2hex(out.data(), out.size(), bytes, size);
  out.pop_back();
  return out;
}

bool from_hex(std::string_view hex, unsigned char* out, size_t size) {
  if (hex.size() != size * 2) return false;
  size_t written = 0;
  const char* end = nullptr;
  if (sodium_hex2bin(out, size, hex.data(), hex.size(), nullptr, &written, &end) != 0) return false;
  return written == size && end == hex.data() + hex.size();
}

std::optional<std::string> canonical_identity(std::string_view id) {
  unsigned char pk[crypto_sign_PUBLICKEYBYTES];
  if (!from_hex(id, pk, sizeof(pk))) return std::nullopt;
  return to_hex(pk, sizeof(pk));
}

void wipe(std::string& secret) {
  if (!secret.empty()) sodium_memzero(secret.data(), secret.size());
  secret.clear();
}

Identity::~Identity() { sodium_memzero(secret_.data(), secret_.size()); }

std::string random_hex(size_t size) {
  sodium_ready();
  std::vector<unsigned char> bytes(size);
  randombytes_buf(bytes.data(), size);
  return to_hex(bytes.data(), size);
}

Identity Identity::generate() {
  sodium_ready();
  Identity id;
  unsigned char pk[crypto_sign_PUBLICKEYBYTES];
  crypto_sign_keypair(pk, id.secret_.data());
  id.id_ = to_hex(pk, sizeof(pk));
  return id;
}

Result<Identity> Identity::load_or_create(const std::string& path) {
  if (!sodium_ready()) return Status::internal("libsodium could not be initialised");
  static_assert(crypto_sign_SECRETKEYBYTES == 64);
  CS_ASSIGN_OR_RETURN(std::optional<std::string> stored, read_private_file(path, "identity key", 256));
  if (stored) {
    const std::string_view text(*stored);
    Identity id;
    const bool parsed =
        text.starts_with(kHeader) && from_hex(text.substr(kHeader.size(), 128), id.secret_.data(), id.secret_.size());
    wipe(*stored);
    if (!parsed) return Status::data_loss(path + ": not a cellserve identity key file");
    id.id_ = to_hex(id.secret_.data() + 32, 32);
    return id;
  }
  Identity id = generate();
  std::string text = std::string(kHeader) + to_hex(id.secret_.data(), id.secret_.size()) + "\n";
  const Status written = write_private_file(path, text);
  wipe(text);
  CS_RETURN_IF_ERROR(written);
  return id;
}

std::string Identity::sign(std::string_view message) const {
  unsigned char sig[crypto_sign_BYTES];
  crypto_sign_detached(sig, nullptr, reinterpret_cast<const unsigned char*>(message.data()), message.size(),
                       secret_.data());
  return to_hex(sig, sizeof(sig));
}

Result<std::string> Identity::open_sealed(std::string_view sealed_hex) const {
  if (sealed_hex.size() % 2 != 0 || sealed_hex.size() < 2 * crypto_box_SEALBYTES) {
    return Status::data_loss("the sealed value is too short to be one");
  }
  std::vector<unsigned char> sealed(sealed_hex.size() / 2);
  if (!from_hex(sealed_hex, sealed.data(), sealed.size())) return Status::data_loss("the sealed value is not hex");
  unsigned char box_pk[crypto_box_PUBLICKEYBYTES];
  unsigned char box_sk[crypto_box_SECRETKEYBYTES];
  if (crypto_sign_ed25519_pk_to_curve25519(box_pk, secret_.data() + 32) != 0 ||
      crypto_sign_ed25519_sk_to_curve25519(box_sk, secret_.data()) != 0) {
    return Status::internal("this identity has no X25519 form");
  }
  std::string plain(sealed.size() - crypto_box_SEALBYTES, '\0');
  const int opened = crypto_box_seal_open(reinterpret_cast<unsigned char*>(plain.data()), sealed.data(), sealed.size(),
                                          box_pk, box_sk);
  sodium_memzero(box_sk, sizeof(box_sk));
  if (opened != 0) {
    sodium_memzero(plain.data(), plain.size());
    return Status::data_loss("the sealed value was not sealed to this device, or was altered");
  }
  return plain;
}

Result<std::string> seal_to_device(std::string_view device_id, std::string_view plain) {
  unsigned char pk[crypto_sign_PUBLICKEYBYTES];
  unsigned char box_pk[crypto_box_PUBLICKEYBYTES];
  if (device_id.size() != 2 * sizeof(pk) || !from_hex(device_id, pk, sizeof(pk)) ||
      crypto_sign_ed25519_pk_to_curve25519(box_pk, pk) != 0) {
    return Status::invalid_argument("not a device key: cannot seal to it");
  }
  std::vector<unsigned char> sealed(plain.size() + crypto_box_SEALBYTES);
  if (!sodium_ready() ||
      crypto_box_seal(sealed.data(), reinterpret_cast<const unsigned char*>(plain.data()), plain.size(), box_pk) != 0) {
    return Status::internal("sealing failed");
  }
  return to_hex(sealed.data(), sealed.size());
}

bool verify_signature(std::string_view public_key_hex, std::string_view message, std::string_view signature_hex) {
  if (!sodium_ready()) return false;
  unsigned char pk[crypto_sign_PUBLICKEYBYTES];
  unsigned char sig[crypto_sign_BYTES];
  if (!from_hex(public_key_hex, pk, sizeof(pk)) || !from_hex(signature_hex, sig, sizeof(sig))) return false;
  return crypto_sign_verify_detached(sig, reinterpret_cast<const unsigned char*>(message.data()), message.size(), pk) ==
         0;
}

}  // namespace cellserve::fleet
