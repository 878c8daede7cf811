// A self-signed certificate for local use (`hub --dev-tls`): an EC P-256 key and an X.509 v3
// certificate for localhost, 127.0.0.1, ::1 and any extra names, valid 30 days. Agents and
// clients trust it by taking the certificate file itself as their CA (`agent --hub-ca`).
#pragma once

#include <string>
#include <vector>

#include "base/status.h"

namespace cellserve::fleet {

struct DevCertificate {
  std::string cert_file;
  std::string key_file;     // mode 0600
  std::string fingerprint;  // SHA-256 of the certificate, "AB:CD:..." as `openssl x509 -fingerprint` prints it
  bool created = false;     // false: an existing certificate, valid for another day, was kept
};

// The certificate in `dir` (cert.pem, key.pem), made when missing, unreadable or within a day of
// expiring. `names`: extra DNS names or IP addresses it must cover. Errors name the file.
Result<DevCertificate> ensure_dev_certificate(const std::string& dir, const std::vector<std::string>& names);

// The SHA-256 fingerprint of the first certificate in the PEM file `cert_file`.
Result<std::string> certificate_fingerprint(const std::string& cert_file);

}  // namespace cellserve::fleet
