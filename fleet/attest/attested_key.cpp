#include "fleet/attest/attested_key.h"

#include <openssl/rsa.h>

#include "base/check.h"
#include "fleet/attest/openssl_util.h"
#include "fleet/crypto/sha256.h"

namespace cellserve::fleet::attest {
namespace {

constexpr int kMinRsaBits = 2048;
constexpr std::string_view kTunnelDomain = "cellserve attested tunnel v1\n";

std::string sha256_raw(std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  CS_CHECK(EVP_Digest(data.data(), data.size(), out, &size, EVP_sha256(), nullptr) == 1) << "SHA-256 unavailable";
  return std::string(reinterpret_cast<const char*>(out), size);
}

}  // namespace

std::string key_fingerprint(std::string_view spki_der) { return sha256_hex(spki_der); }

std::string attested_tunnel_digest(std::string_view origin, std::string_view challenge_hex,
                                   std::string_view device_id) {
  std::string message(kTunnelDomain);
  message.append(origin).append("\n").append(challenge_hex).append("\n").append(device_id);
  return sha256_raw(message);
}

std::string signature_problem(EVP_PKEY* key, std::string_view message, std::string_view signature_der) {
  if (key == nullptr) return "the public key does not parse";
  const int type = EVP_PKEY_get_base_id(key);
  if (type != EVP_PKEY_EC && type != EVP_PKEY_RSA) return "the attested key is neither EC nor RSA";
  if (type == EVP_PKEY_RSA && EVP_PKEY_get_bits(key) < kMinRsaBits) {
    return "the attested RSA key has " + std::to_string(EVP_PKEY_get_bits(key)) + " bits (at least " +
           std::to_string(kMinRsaBits) + " required)";
  }
  MdCtxPtr md(EVP_MD_CTX_new());
  EVP_PKEY_CTX* pctx = nullptr;  // owned by md
  if (!md || EVP_DigestVerifyInit(md.get(), &pctx, EVP_sha256(), nullptr, key) != 1) {
    return "cannot start signature verification";
  }
  if (type == EVP_PKEY_RSA && EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PADDING) != 1) {
    return "cannot select RSA PKCS#1 v1.5";
  }
  if (EVP_DigestVerify(md.get(), reinterpret_cast<const unsigned char*>(signature_der.data()), signature_der.size(),
                       reinterpret_cast<const unsigned char*>(message.data()), message.size()) != 1) {
    return "the signature does not verify with the attested key";
  }
  return {};
}

std::string signature_problem(std::string_view spki_der, std::string_view message, std::string_view signature_der) {
  const OpenSslErrorScope errors;
  const auto* p = reinterpret_cast<const unsigned char*>(spki_der.data());
  PkeyPtr key(d2i_PUBKEY(nullptr, &p, static_cast<long>(spki_der.size())));
  if (!key || p != reinterpret_cast<const unsigned char*>(spki_der.data()) + spki_der.size()) {
    return "the pinned public key does not parse";
  }
  return signature_problem(key.get(), message, signature_der);
}

}  // namespace cellserve::fleet::attest
