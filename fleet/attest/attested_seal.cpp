#include "fleet/attest/attested_seal.h"

#include <openssl/core_names.h>
#include <openssl/kdf.h>
#include <sodium.h>

#include <vector>

#include "fleet/attest/openssl_util.h"
#include "fleet/crypto/identity.h"

namespace cellserve::fleet::attest {
namespace {

constexpr std::string_view kSealInfo = "cellserve attested seal v1\n";
constexpr size_t kMaxPeerKeyBytes = 512;  // a P-256 SubjectPublicKeyInfo is 91 bytes

using PkeyCtxPtr = std::unique_ptr<EVP_PKEY_CTX, OpenSslDeleter<EVP_PKEY_CTX, EVP_PKEY_CTX_free>>;

const unsigned char* bytes(std::string_view s) { return reinterpret_cast<const unsigned char*>(s.data()); }

// The P-256 public key in `spki_der`, or nullptr.
PkeyPtr p256_public_key(std::string_view spki_der) {
  const unsigned char* p = bytes(spki_der);
  PkeyPtr key(d2i_PUBKEY(nullptr, &p, static_cast<long>(spki_der.size())));
  if (!key || p != bytes(spki_der) + spki_der.size() || EVP_PKEY_get_base_id(key.get()) != EVP_PKEY_EC) return nullptr;
  char group[64] = {};
  if (EVP_PKEY_get_group_name(key.get(), group, sizeof(group), nullptr) != 1 ||
      std::string_view(group) != "prime256v1") {
    return nullptr;
  }
  return key;
}

std::string spki_of(EVP_PKEY* key) {
  unsigned char* der = nullptr;
  const int n = i2d_PUBKEY(key, &der);
  if (n <= 0) return {};
  std::string out(reinterpret_cast<const char*>(der), static_cast<size_t>(n));
  OPENSSL_free(der);
  return out;
}

// HKDF-SHA256 of the shared secret into the box key.
Result<std::string> box_key(std::string_view shared, std::string_view ephemeral_spki, std::string_view device_id) {
  PkeyCtxPtr ctx(EVP_PKEY_CTX_new_id(EVP_PKEY_HKDF, nullptr));
  std::string info(kSealInfo);
  info.append(device_id);
  std::string key(crypto_secretbox_KEYBYTES, '\0');
  size_t size = key.size();
  if (!ctx || EVP_PKEY_derive_init(ctx.get()) != 1 || EVP_PKEY_CTX_set_hkdf_md(ctx.get(), EVP_sha256()) != 1 ||
      EVP_PKEY_CTX_set1_hkdf_salt(ctx.get(), bytes(ephemeral_spki), static_cast<int>(ephemeral_spki.size())) != 1 ||
      EVP_PKEY_CTX_set1_hkdf_key(ctx.get(), bytes(shared), static_cast<int>(shared.size())) != 1 ||
      EVP_PKEY_CTX_add1_hkdf_info(ctx.get(), bytes(info), static_cast<int>(info.size())) != 1 ||
      EVP_PKEY_derive(ctx.get(), reinterpret_cast<unsigned char*>(key.data()), &size) != 1 || size != key.size()) {
    return Status::internal("HKDF-SHA256 failed");
  }
  return key;
}

struct WireSeal {
  std::string ephemeral_spki;
  std::string nonce;
  std::string box;
};

Result<WireSeal> parse_wire(std::string_view sealed) {
  if (!is_attested_seal(sealed)) return Status::data_loss("not an attested seal");
  const std::string_view hex = sealed.substr(kAttestedSealPrefix.size());
  std::vector<unsigned char> raw(hex.size() / 2);
  if (hex.size() % 2 != 0 || raw.size() < 2 || !from_hex(hex, raw.data(), raw.size())) {
    return Status::data_loss("an attested seal that is not hex");
  }
  const size_t key_size = (static_cast<size_t>(raw[0]) << 8) | raw[1];
  if (key_size > kMaxPeerKeyBytes ||
      raw.size() < 2 + key_size + crypto_secretbox_NONCEBYTES + crypto_secretbox_MACBYTES) {
    return Status::data_loss("an attested seal that is too short");
  }
  const std::string all(reinterpret_cast<const char*>(raw.data()), raw.size());
  return WireSeal{all.substr(2, key_size), all.substr(2 + key_size, crypto_secretbox_NONCEBYTES),
                  all.substr(2 + key_size + crypto_secretbox_NONCEBYTES)};
}

}  // namespace

std::string ecdh_probe_peer() {
  PkeyPtr key(EVP_EC_gen("P-256"));
  return key ? spki_of(key.get()) : std::string();
}

bool is_attested_seal(std::string_view sealed) { return sealed.starts_with(kAttestedSealPrefix); }

Result<std::string> ecdh_shared_secret(EVP_PKEY* own, std::string_view peer_spki_der) {
  const OpenSslErrorScope errors;
  PkeyPtr peer = p256_public_key(peer_spki_der);
  if (!peer) return Status::invalid_argument("the peer key is not an EC P-256 public key");
  PkeyCtxPtr ctx(EVP_PKEY_CTX_new(own, nullptr));
  size_t size = 0;
  if (!ctx || EVP_PKEY_derive_init(ctx.get()) != 1 || EVP_PKEY_derive_set_peer(ctx.get(), peer.get()) != 1 ||
      EVP_PKEY_derive(ctx.get(), nullptr, &size) != 1) {
    return Status::invalid_argument("ECDH failed");
  }
  std::string shared(size, '\0');
  if (EVP_PKEY_derive(ctx.get(), reinterpret_cast<unsigned char*>(shared.data()), &size) != 1) {
    return Status::invalid_argument("ECDH failed");
  }
  shared.resize(size);
  return shared;
}

Result<std::string> seal_to_attested_key(std::string_view key_spki_der, std::string_view device_id,
                                         std::string_view inner) {
  const OpenSslErrorScope errors;
  if (!p256_public_key(key_spki_der)) return Status::invalid_argument("the attested key is not an EC P-256 key");
  PkeyPtr ephemeral(EVP_EC_gen("P-256"));
  if (!ephemeral || sodium_init() < 0) return Status::internal("no ephemeral P-256 key");
  const std::string ephemeral_spki = spki_of(ephemeral.get());
  CS_ASSIGN_OR_RETURN(std::string shared, ecdh_shared_secret(ephemeral.get(), key_spki_der));
  CS_ASSIGN_OR_RETURN(std::string key, box_key(shared, ephemeral_spki, device_id));
  wipe(shared);
  std::string nonce(crypto_secretbox_NONCEBYTES, '\0');
  randombytes_buf(nonce.data(), nonce.size());
  std::string box(inner.size() + crypto_secretbox_MACBYTES, '\0');
  crypto_secretbox_easy(reinterpret_cast<unsigned char*>(box.data()), bytes(inner), inner.size(), bytes(nonce),
                        bytes(key));
  wipe(key);
  std::string raw;
  raw.push_back(static_cast<char>(ephemeral_spki.size() >> 8));
  raw.push_back(static_cast<char>(ephemeral_spki.size() & 0xff));
  raw += ephemeral_spki + nonce + box;
  return std::string(kAttestedSealPrefix) + to_hex(bytes(raw), raw.size());
}

Result<std::string> attested_seal_peer(std::string_view sealed) {
  CS_ASSIGN_OR_RETURN(WireSeal w, parse_wire(sealed));
  return w.ephemeral_spki;
}

Result<std::string> open_attested_seal(std::string_view sealed, std::string_view device_id,
                                       std::string_view shared_secret) {
  CS_ASSIGN_OR_RETURN(WireSeal w, parse_wire(sealed));
  CS_ASSIGN_OR_RETURN(std::string key, box_key(shared_secret, w.ephemeral_spki, device_id));
  std::string inner(w.box.size() - crypto_secretbox_MACBYTES, '\0');
  const int rc = crypto_secretbox_open_easy(reinterpret_cast<unsigned char*>(inner.data()), bytes(w.box), w.box.size(),
                                            bytes(w.nonce), bytes(key));
  wipe(key);
  if (rc != 0) return Status::data_loss("the attested seal does not open with this key");
  return inner;
}

}  // namespace cellserve::fleet::attest
