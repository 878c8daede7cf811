// Sealing to the attested key: only the holder of the attested private key (through its helper's
// ECDH) can open the outer box, for the device it was sealed for.
#include "fleet/attest/attested_seal.h"

#include <gtest/gtest.h>

#include "attestation_fixture.h"
#include "fleet/attest/openssl_util.h"

namespace cellserve::fleet::attest {
namespace {

std::string spki_of(EVP_PKEY* key) {
  unsigned char* der = nullptr;
  const int n = i2d_PUBKEY(key, &der);
  std::string out(reinterpret_cast<const char*>(der), static_cast<size_t>(n));
  OPENSSL_free(der);
  return out;
}

// What the device does: ECDH with its key through the helper, then open.
Result<std::string> open_with(EVP_PKEY* key, const std::string& sealed, const std::string& device) {
  CS_ASSIGN_OR_RETURN(std::string peer, attested_seal_peer(sealed));
  CS_ASSIGN_OR_RETURN(std::string shared, ecdh_shared_secret(key, peer));
  return open_attested_seal(sealed, device, shared);
}

TEST(AttestedSeal, OpensOnlyWithTheAttestedKeyForItsDevice) {
  const PkeyPtr attested = testing::make_key();
  const PkeyPtr other = testing::make_key();
  const std::string device(64, 'a');
  auto sealed = seal_to_attested_key(spki_of(attested.get()), device, "inner-seal");
  ASSERT_TRUE(sealed.ok()) << sealed.status().to_string();
  EXPECT_TRUE(is_attested_seal(*sealed));
  EXPECT_EQ(open_with(attested.get(), *sealed, device).value(), "inner-seal");
  EXPECT_FALSE(open_with(other.get(), *sealed, device).ok());                   // a stolen identity, another phone
  EXPECT_FALSE(open_with(attested.get(), *sealed, std::string(64, 'b')).ok());  // sealed for another device
  std::string altered = *sealed;
  altered.back() = altered.back() == '0' ? '1' : '0';
  EXPECT_FALSE(open_with(attested.get(), altered, device).ok());
  EXPECT_FALSE(attested_seal_peer("attested1:zz").ok());
  EXPECT_FALSE(attested_seal_peer("attested1:").ok());
  EXPECT_FALSE(attested_seal_peer("ffff").ok());
  // Fresh each time: another ephemeral key.
  EXPECT_NE(seal_to_attested_key(spki_of(attested.get()), device, "inner-seal").value(), *sealed);
}

TEST(AttestedSeal, RefusesKeysThatAreNotP256) {
  const PkeyPtr rsa = testing::make_key(testing::KeyKind::Rsa2048);
  EXPECT_FALSE(seal_to_attested_key(spki_of(rsa.get()), std::string(64, 'a'), "x").ok());
  EXPECT_FALSE(seal_to_attested_key("garbage", std::string(64, 'a'), "x").ok());
  const PkeyPtr key = testing::make_key();
  EXPECT_FALSE(ecdh_shared_secret(key.get(), spki_of(rsa.get())).ok());
}

}  // namespace
}  // namespace cellserve::fleet::attest
