// OpenSSL ownership and small X.509 helpers shared by fleet/attest (and its test fixture).
// Every OpenSSL object the module makes is held by one of these unique_ptr types, so no path,
// error paths included, leaks one.
#pragma once

#include <openssl/asn1.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

#include <memory>
#include <string>
#include <string_view>

namespace cellserve::fleet::attest {

template <typename T, void (*Free)(T*)>
struct OpenSslDeleter {
  void operator()(T* p) const { Free(p); }
};
using X509Ptr = std::unique_ptr<X509, OpenSslDeleter<X509, X509_free>>;
using PkeyPtr = std::unique_ptr<EVP_PKEY, OpenSslDeleter<EVP_PKEY, EVP_PKEY_free>>;
using BioPtr = std::unique_ptr<BIO, OpenSslDeleter<BIO, BIO_vfree>>;
using BignumPtr = std::unique_ptr<BIGNUM, OpenSslDeleter<BIGNUM, BN_free>>;
using MdCtxPtr = std::unique_ptr<EVP_MD_CTX, OpenSslDeleter<EVP_MD_CTX, EVP_MD_CTX_free>>;
using StorePtr = std::unique_ptr<X509_STORE, OpenSslDeleter<X509_STORE, X509_STORE_free>>;
using StoreCtxPtr = std::unique_ptr<X509_STORE_CTX, OpenSslDeleter<X509_STORE_CTX, X509_STORE_CTX_free>>;
using ObjectPtr = std::unique_ptr<ASN1_OBJECT, OpenSslDeleter<ASN1_OBJECT, ASN1_OBJECT_free>>;
using IntegerPtr = std::unique_ptr<ASN1_INTEGER, OpenSslDeleter<ASN1_INTEGER, ASN1_INTEGER_free>>;
using OctetsPtr = std::unique_ptr<ASN1_OCTET_STRING, OpenSslDeleter<ASN1_OCTET_STRING, ASN1_OCTET_STRING_free>>;
using ExtensionPtr = std::unique_ptr<X509_EXTENSION, OpenSslDeleter<X509_EXTENSION, X509_EXTENSION_free>>;
// OpenSSL 3 spells the stack functions as macros, so this one cannot be an OpenSslDeleter.
struct X509StackFree {
  void operator()(STACK_OF(X509) * s) const { sk_X509_free(s); }
};
using X509StackPtr = std::unique_ptr<STACK_OF(X509), X509StackFree>;

// Drops, on scope exit, every error OpenSSL queued on this thread since construction. Parsing
// hostile input queues errors by design; left behind they would confuse the next SSL_get_error
// on the same thread (a TLS session of the hub).
class OpenSslErrorScope {
 public:
  OpenSslErrorScope() { ERR_set_mark(); }
  ~OpenSslErrorScope() { ERR_pop_to_mark(); }
  OpenSslErrorScope(const OpenSslErrorScope&) = delete;
  OpenSslErrorScope& operator=(const OpenSslErrorScope&) = delete;
};

// The certificate in `der`, or nullptr unless `der` is exactly one DER certificate (no
// trailing bytes).
X509Ptr certificate_from_der(std::string_view der);

// The DER encoding of `cert` (empty on failure).
std::string certificate_to_der(const X509* cert);

// The DER SubjectPublicKeyInfo of `cert`'s key (empty on failure).
std::string public_key_der(const X509* cert);

// The serial number as lower-case hex without leading zeros ("0" for zero, "-..." when
// negative), the spelling of Google's revocation list.
std::string serial_hex(const X509* cert);

// The notBefore / notAfter time as "YYYY-MM-DD HH:MM:SS UTC" (for refusal reasons).
std::string time_text(const ASN1_TIME* t);

// "CN=..., O=..." of `cert`'s subject, one line.
std::string subject_text(const X509* cert);

}  // namespace cellserve::fleet::attest
