#include "attestation_fixture.h"

#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <openssl/x509v3.h>

#include <cstdint>

#include "base/check.h"

namespace cellserve::fleet::attest::testing {
namespace {

// A minimal DER writer: enough of X.690 for a KeyDescription.
std::string der_length(size_t n) {
  if (n < 0x80) return std::string(1, static_cast<char>(n));
  std::string bytes;
  for (; n > 0; n >>= 8) bytes.insert(bytes.begin(), static_cast<char>(n & 0xff));
  return std::string(1, static_cast<char>(0x80 | bytes.size())) + bytes;
}
std::string tlv(unsigned char tag, const std::string& content) {
  return std::string(1, static_cast<char>(tag)) + der_length(content.size()) + content;
}
std::string integer_content(int64_t v) {  // minimal two's complement, big-endian
  std::string out;
  for (int i = 7; i >= 0; --i) out.push_back(static_cast<char>((static_cast<uint64_t>(v) >> (8 * i)) & 0xff));
  while (out.size() > 1 && ((out[0] == 0 && !(out[1] & 0x80)) || (out[0] == '\xff' && (out[1] & 0x80)))) {
    out.erase(out.begin());
  }
  return out;
}
std::string integer(int64_t v) { return tlv(0x02, integer_content(v)); }
std::string enumerated(int64_t v) { return tlv(0x0a, integer_content(v)); }
std::string octets(const std::string& s) { return tlv(0x04, s); }
std::string boolean(bool b) { return tlv(0x01, std::string(1, b ? '\xff' : '\x00')); }
std::string sequence(const std::string& content) { return tlv(0x30, content); }
std::string set_of(const std::string& content) { return tlv(0x31, content); }
std::string null_value() { return tlv(0x05, ""); }
// [number] EXPLICIT: context-specific, constructed; numbers >= 31 in the high-tag form.
std::string explicit_tag(int number, const std::string& content) {
  std::string id;
  if (number < 31) {
    id.push_back(static_cast<char>(0xa0 | number));
  } else {
    id.push_back('\xbf');
    std::string base128;
    for (int n = number; n > 0; n >>= 7) base128.insert(base128.begin(), static_cast<char>(0x80 | (n & 0x7f)));
    base128.back() = static_cast<char>(base128.back() & 0x7f);
    id += base128;
  }
  return id + der_length(content.size()) + content;
}

std::string root_of_trust(const KeyDescriptionSpec& s) {
  return explicit_tag(704, sequence(octets(std::string(32, '\x5a')) + boolean(s.device_locked) +
                                    enumerated(static_cast<int>(s.boot_state)) + octets(std::string(32, '\x3c'))));
}

std::string application_id(const KeyDescriptionSpec& s) {
  if (s.app_packages.empty() && s.app_digests.empty()) return {};
  std::string packages;
  for (const std::string& p : s.app_packages) packages += sequence(octets(p) + integer(1));
  std::string digests;
  for (const std::string& d : s.app_digests) digests += octets(d);
  return explicit_tag(709, octets(sequence(set_of(packages) + set_of(digests))));
}

void set_validity(X509* x, const Validity& v) {
  CS_CHECK(ASN1_TIME_set(X509_getm_notBefore(x), v.not_before) != nullptr);
  CS_CHECK(ASN1_TIME_set(X509_getm_notAfter(x), v.not_after) != nullptr);
}

void add_extension(X509* x, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, x, nullptr, nullptr, 0);
  ExtensionPtr ext(X509V3_EXT_conf_nid(nullptr, &ctx, nid, value));
  CS_CHECK(ext && X509_add_ext(x, ext.get(), -1) == 1) << value;
}

// A v3 certificate for `key` named CN=`name`, issued by `issuer` (self-issued when null).
X509Ptr new_certificate(const std::string& name, long serial, const Validity& validity, EVP_PKEY* key,
                        const X509* issuer) {
  X509Ptr x(X509_new());
  CS_CHECK(x);
  X509_set_version(x.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(x.get()), serial);
  set_validity(x.get(), validity);
  X509_set_pubkey(x.get(), key);
  X509_NAME_add_entry_by_txt(X509_get_subject_name(x.get()), "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(name.c_str()), -1, -1, 0);
  X509_set_issuer_name(x.get(), issuer ? X509_get_subject_name(issuer) : X509_get_subject_name(x.get()));
  return x;
}

void sign(X509* x, EVP_PKEY* issuer_key) { CS_CHECK(X509_sign(x, issuer_key, EVP_sha256()) > 0); }

Authority make_ca(const std::string& name, long serial, const Validity& validity, EVP_PKEY* key,
                  const Authority* issuer) {
  Authority ca{new_certificate(name, serial, validity, key, issuer ? issuer->cert.get() : nullptr), nullptr};
  EVP_PKEY_up_ref(key);
  ca.key.reset(key);
  add_extension(ca.cert.get(), issuer ? issuer->cert.get() : ca.cert.get(), NID_basic_constraints, "critical,CA:TRUE");
  add_extension(ca.cert.get(), issuer ? issuer->cert.get() : ca.cert.get(), NID_key_usage, "critical,keyCertSign");
  sign(ca.cert.get(), issuer ? issuer->key.get() : key);
  return ca;
}

}  // namespace

std::string encode_key_description(const KeyDescriptionSpec& s) {
  std::string hw = explicit_tag(1, set_of(integer(2))) + explicit_tag(2, integer(3)) + explicit_tag(3, integer(256)) +
                   explicit_tag(10, integer(1)) + explicit_tag(503, null_value()) + explicit_tag(702, integer(0));
  std::string sw = explicit_tag(701, integer(1767225600000)) + application_id(s);
  (s.root_of_trust_in_software_list ? sw : hw) += s.root_of_trust ? root_of_trust(s) : std::string();
  hw += explicit_tag(705, integer(150000));
  if (s.os_patch_level) (s.patch_in_software_list ? sw : hw) += explicit_tag(706, integer(*s.os_patch_level));
  hw += explicit_tag(718, integer(20240501)) + explicit_tag(719, integer(20240501));
  return sequence(integer(s.attestation_version) + enumerated(static_cast<int>(s.attestation_level)) +
                  integer(s.keymint_version) + enumerated(static_cast<int>(s.keymint_level)) + octets(s.challenge) +
                  octets("") + sequence(sw) + sequence(hw));
}

PkeyPtr make_key(KeyKind kind) {
  PkeyPtr key(kind == KeyKind::EcP256 ? EVP_EC_gen("P-256") : EVP_RSA_gen(2048));
  CS_CHECK(key) << "key generation";
  return key;
}

Authority make_root(const std::string& name, long serial, Validity validity) {
  PkeyPtr key = make_key();
  return make_ca(name, serial, validity, key.get(), nullptr);
}

Authority reissue_root(const Authority& root, long serial, Validity validity) {
  const X509_NAME* subject = X509_get_subject_name(root.cert.get());
  char cn[256] = {};
  X509_NAME_get_text_by_NID(subject, NID_commonName, cn, sizeof cn);
  return make_ca(cn, serial, validity, root.key.get(), nullptr);
}

Authority make_intermediate(const Authority& issuer, const std::string& name, long serial, Validity validity) {
  PkeyPtr key = make_key();
  return make_ca(name, serial, validity, key.get(), &issuer);
}

AttestedKey make_leaf(const Authority& issuer, const LeafSpec& spec) {
  AttestedKey leaf{nullptr, make_key(spec.key)};
  // Like KeyMint's leaf: no basicConstraints, the keyUsage of a signing key.
  leaf.cert = new_certificate(spec.subject, spec.serial, spec.validity, leaf.key.get(), issuer.cert.get());
  add_extension(leaf.cert.get(), issuer.cert.get(), NID_key_usage, "critical,digitalSignature");
  if (spec.with_extension) {
    add_attestation_extension(
        leaf.cert.get(), spec.extension_der ? *spec.extension_der : encode_key_description(spec.description), nullptr);
  }
  sign(leaf.cert.get(), issuer.key.get());
  return leaf;
}

void add_attestation_extension(X509* cert, const std::string& der, EVP_PKEY* issuer_key) {
  ObjectPtr oid(OBJ_txt2obj(std::string(kKeyDescriptionOid).c_str(), 1));
  OctetsPtr data(ASN1_OCTET_STRING_new());
  CS_CHECK(oid && data &&
           ASN1_OCTET_STRING_set(data.get(), reinterpret_cast<const unsigned char*>(der.data()),
                                 static_cast<int>(der.size())) == 1);
  ExtensionPtr ext(X509_EXTENSION_create_by_OBJ(nullptr, oid.get(), 0, data.get()));
  CS_CHECK(ext && X509_add_ext(cert, ext.get(), -1) == 1);
  if (issuer_key != nullptr) sign(cert, issuer_key);
}

std::string sign_sha256(EVP_PKEY* key, std::string_view message) {
  MdCtxPtr md(EVP_MD_CTX_new());
  EVP_PKEY_CTX* pctx = nullptr;
  CS_CHECK(md && EVP_DigestSignInit(md.get(), &pctx, EVP_sha256(), nullptr, key) == 1);
  if (EVP_PKEY_get_base_id(key) == EVP_PKEY_RSA) {
    CS_CHECK(EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PADDING) == 1);
  }
  size_t size = 0;
  const auto* msg = reinterpret_cast<const unsigned char*>(message.data());
  CS_CHECK(EVP_DigestSign(md.get(), nullptr, &size, msg, message.size()) == 1);
  std::string sig(size, '\0');
  CS_CHECK(EVP_DigestSign(md.get(), reinterpret_cast<unsigned char*>(sig.data()), &size, msg, message.size()) == 1);
  sig.resize(size);
  return sig;
}

std::string der_of(const X509* cert) { return certificate_to_der(cert); }

namespace {
std::string bio_text(BIO* bio) {
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  return n > 0 ? std::string(data, static_cast<size_t>(n)) : std::string();
}
}  // namespace

std::string pem_of(X509* cert) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  CS_CHECK(bio && PEM_write_bio_X509(bio.get(), cert) == 1);
  return bio_text(bio.get());
}

std::string pem_of_key(EVP_PKEY* key) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  CS_CHECK(bio && PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) == 1);
  return bio_text(bio.get());
}

Result<X509Ptr> certificate_from_pem(std::string_view pem) {
  const OpenSslErrorScope errors;
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  X509Ptr cert(bio ? PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr) : nullptr);
  if (!cert) return Status::invalid_argument("not a PEM certificate");
  return cert;
}

Result<PkeyPtr> key_from_pem(std::string_view pem) {
  const OpenSslErrorScope errors;
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  PkeyPtr key(bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr) : nullptr);
  if (!key) return Status::invalid_argument("not a PEM private key");
  return key;
}

TestKeystore::TestKeystore(Validity intermediate_validity, long intermediate_serial)
    : root_(make_root("cellserve test attestation root", 0x100)),
      intermediate_(make_intermediate(root_, "cellserve test attestation intermediate", intermediate_serial,
                                      intermediate_validity)) {}

TestKeystore::TestKeystore(Authority root, Authority intermediate)
    : root_(std::move(root)), intermediate_(std::move(intermediate)) {}

AttestationEvidence TestKeystore::attest(const LeafSpec& spec) const {
  return evidence_for(make_leaf(intermediate_, spec), spec.description.challenge);
}

AttestationEvidence TestKeystore::evidence_for(const AttestedKey& leaf, std::string_view challenge) const {
  return AttestationEvidence{{der_of(leaf.cert.get()), der_of(intermediate_.cert.get()), der_of(root_.cert.get())},
                             sign_sha256(leaf.key.get(), challenge)};
}

}  // namespace cellserve::fleet::attest::testing
