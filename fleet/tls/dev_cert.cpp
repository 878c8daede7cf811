#include "fleet/tls/dev_cert.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/bn.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <functional>
#include <memory>

#include <boost/asio/ip/address.hpp>

#include "fleet/tls/tls.h"

namespace cellserve::fleet {
namespace {

constexpr int kValidDays = 30;

template <typename T, void (*Free)(T*)>
struct Deleter {
  void operator()(T* p) const { Free(p); }
};
using X509Ptr = std::unique_ptr<X509, Deleter<X509, X509_free>>;
using KeyPtr = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY, EVP_PKEY_free>>;
using BioPtr = std::unique_ptr<BIO, Deleter<BIO, BIO_vfree>>;

X509Ptr read_certificate(const std::string& file) {
  BioPtr bio(BIO_new_file(file.c_str(), "r"));
  if (!bio) return nullptr;
  return X509Ptr(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
}

std::string fingerprint_of(X509* x) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  X509_digest(x, EVP_sha256(), md, &n);
  std::string out;
  char hex[4];
  for (unsigned int i = 0; i < n; ++i) {
    std::snprintf(hex, sizeof hex, i == 0 ? "%02X" : ":%02X", md[i]);
    out += hex;
  }
  return out;
}

bool add_extension(X509* x, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, x, x, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
  if (ext == nullptr) return false;
  const bool ok = X509_add_ext(x, ext, -1) == 1;
  X509_EXTENSION_free(ext);
  return ok;
}

// "DNS:localhost,IP:127.0.0.1,...": each name once, an address as IP, anything else as DNS.
std::string subject_alt_names(const std::vector<std::string>& extra) {
  std::vector<std::string> names = {"localhost", "127.0.0.1", "::1"};
  for (const std::string& n : extra) {
    if (n.empty() || n == "0.0.0.0" || n == "::" || n.find_first_of(",\r\n") != std::string::npos) continue;
    if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
  }
  std::string out;
  for (const std::string& n : names) {
    boost::system::error_code ec;
    (void)boost::asio::ip::make_address(n, ec);
    out += (out.empty() ? "" : ",") + std::string(ec ? "DNS:" : "IP:") + n;
  }
  return out;
}

Status write_pem(const std::string& file, mode_t mode, const std::function<bool(BIO*)>& write) {
  const std::string tmp = file + ".tmp";
  ::unlink(tmp.c_str());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0) return Status::internal(tmp + ": cannot create");
  FILE* f = ::fdopen(fd, "w");
  if (f == nullptr) {
    ::close(fd);
    return Status::internal(tmp + ": cannot open");
  }
  BioPtr bio(BIO_new_fp(f, BIO_CLOSE));
  if (!bio || !write(bio.get())) return Status::internal(file + ": cannot write: " + openssl_error());
  bio.reset();
  if (::rename(tmp.c_str(), file.c_str()) != 0) return Status::internal(file + ": cannot rename into place");
  return {};
}

}  // namespace

Result<std::string> certificate_fingerprint(const std::string& cert_file) {
  X509Ptr x = read_certificate(cert_file);
  if (!x) return Status::invalid_argument(cert_file + ": not a PEM certificate");
  return fingerprint_of(x.get());
}

Result<DevCertificate> ensure_dev_certificate(const std::string& dir, const std::vector<std::string>& names) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::internal(dir + ": cannot create: " + ec.message());
  DevCertificate out{dir + "/cert.pem", dir + "/key.pem", "", false};
  if (X509Ptr existing = read_certificate(out.cert_file); existing && ::access(out.key_file.c_str(), R_OK) == 0) {
    time_t tomorrow = ::time(nullptr) + 24 * 3600;
    if (X509_cmp_time(X509_get0_notAfter(existing.get()), &tomorrow) > 0) {
      out.fingerprint = fingerprint_of(existing.get());
      return out;
    }
  }
  KeyPtr key(EVP_EC_gen("P-256"));
  X509Ptr x(X509_new());
  if (!key || !x) return Status::internal("dev TLS: " + openssl_error());
  X509_set_version(x.get(), 2);
  std::unique_ptr<BIGNUM, Deleter<BIGNUM, BN_free>> serial(BN_new());
  BN_rand(serial.get(), 64, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY);
  BN_to_ASN1_INTEGER(serial.get(), X509_get_serialNumber(x.get()));
  X509_gmtime_adj(X509_getm_notBefore(x.get()), -300);
  X509_gmtime_adj(X509_getm_notAfter(x.get()), static_cast<long>(kValidDays) * 24 * 3600);
  X509_set_pubkey(x.get(), key.get());
  X509_NAME* subject = X509_get_subject_name(x.get());
  X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>("cellserve dev hub"),
                             -1, -1, 0);
  X509_set_issuer_name(x.get(), subject);
  if (!add_extension(x.get(), NID_basic_constraints, "critical,CA:TRUE") ||
      !add_extension(x.get(), NID_key_usage, "critical,digitalSignature,keyCertSign") ||
      !add_extension(x.get(), NID_subject_alt_name, subject_alt_names(names)) ||
      X509_sign(x.get(), key.get(), EVP_sha256()) == 0) {
    return Status::internal("dev TLS: " + openssl_error());
  }
  CS_RETURN_IF_ERROR(write_pem(out.key_file, 0600, [&](BIO* b) {
    return PEM_write_bio_PrivateKey(b, key.get(), nullptr, nullptr, 0, nullptr, nullptr) == 1;
  }));
  CS_RETURN_IF_ERROR(write_pem(out.cert_file, 0644, [&](BIO* b) { return PEM_write_bio_X509(b, x.get()) == 1; }));
  out.fingerprint = fingerprint_of(x.get());
  out.created = true;
  return out;
}

}  // namespace cellserve::fleet
