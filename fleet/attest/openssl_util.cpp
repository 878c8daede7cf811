#include "fleet/attest/openssl_util.h"

#include <openssl/x509v3.h>

#include <cctype>
#include <climits>
#include <cstdio>
#include <ctime>

namespace cellserve::fleet::attest {

X509Ptr certificate_from_der(std::string_view der) {
  if (der.empty() || der.size() > static_cast<size_t>(LONG_MAX)) return nullptr;
  const auto* p = reinterpret_cast<const unsigned char*>(der.data());
  X509Ptr cert(d2i_X509(nullptr, &p, static_cast<long>(der.size())));
  if (!cert || p != reinterpret_cast<const unsigned char*>(der.data()) + der.size()) return nullptr;
  return cert;
}

std::string certificate_to_der(const X509* cert) {
  unsigned char* out = nullptr;
  const int n = i2d_X509(cert, &out);
  if (n <= 0) return {};
  std::string der(reinterpret_cast<const char*>(out), static_cast<size_t>(n));
  OPENSSL_free(out);
  return der;
}

std::string serial_hex(const X509* cert) {
  BignumPtr bn(ASN1_INTEGER_to_BN(X509_get0_serialNumber(cert), nullptr));
  if (!bn) return {};
  if (BN_is_zero(bn.get())) return "0";
  char* hex = BN_bn2hex(bn.get());  // upper case, whole bytes ("0100"), "-" when negative
  if (hex == nullptr) return {};
  std::string_view digits(hex);
  std::string out;
  if (!digits.empty() && digits.front() == '-') {
    out.push_back('-');
    digits.remove_prefix(1);
  }
  while (digits.size() > 1 && digits.front() == '0') digits.remove_prefix(1);
  for (const char c : digits) out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  OPENSSL_free(hex);
  return out;
}

std::string time_text(const ASN1_TIME* t) {
  std::tm tm{};
  if (t == nullptr || ASN1_TIME_to_tm(t, &tm) != 1) return "(unreadable time)";
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

std::string subject_text(const X509* cert) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio || X509_NAME_print_ex(bio.get(), X509_get_subject_name(cert), 0, XN_FLAG_ONELINE) < 0) return {};
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio.get(), &data);
  return n > 0 ? std::string(data, static_cast<size_t>(n)) : std::string();
}

std::string public_key_der(const X509* cert) {
  EVP_PKEY* key = X509_get0_pubkey(cert);
  if (key == nullptr) return {};
  unsigned char* der = nullptr;
  const int n = i2d_PUBKEY(key, &der);
  if (n <= 0) return {};
  std::string out(reinterpret_cast<const char*>(der), static_cast<size_t>(n));
  OPENSSL_free(der);
  return out;
}

}  // namespace cellserve::fleet::attest
