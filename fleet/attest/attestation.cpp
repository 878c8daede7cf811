#include "fleet/attest/attestation.h"

#include <openssl/crypto.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include <fstream>

#include "base/check.h"
#include "fleet/attest/chain_check.h"
#include "fleet/attest/google_roots.h"
#include "fleet/attest/openssl_util.h"
#include "fleet/crypto/identity.h"

namespace cellserve::fleet::attest {
namespace {

constexpr size_t kChallengeBytes = 32;
constexpr size_t kMaxRootsFileBytes = 1024 * 1024;

AttestationVerdict refuse(AttestationVerdict v, Refusal refusal, std::string reason) {
  v.attested = false;
  v.refusal = refusal;
  v.reason = std::move(reason);
  return v;
}

Result<std::vector<X509Ptr>> read_pem(std::string_view pem, const std::string& what) {
  if (pem.size() > kMaxRootsFileBytes) return Status::invalid_argument(what + ": larger than 1 MiB");
  const OpenSslErrorScope errors;
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  if (!bio) return Status::internal(what + ": out of memory");
  std::vector<X509Ptr> certs;
  while (X509Ptr cert{PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)}) certs.push_back(std::move(cert));
  // The loop ends at the end of the text (no further BEGIN line) or at a block that is broken.
  const unsigned long err = ERR_peek_last_error();
  if (ERR_GET_LIB(err) != ERR_LIB_PEM || ERR_GET_REASON(err) != PEM_R_NO_START_LINE) {
    return Status::invalid_argument(what + ": certificate " + std::to_string(certs.size()) + " does not parse");
  }
  if (certs.empty()) return Status::invalid_argument(what + ": no PEM certificate");
  return certs;
}

std::string to_pem(X509* cert) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_X509(bio.get(), cert) != 1) return {};
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio.get(), &data);
  return n > 0 ? std::string(data, static_cast<size_t>(n)) : std::string();
}

// The DER inside the leaf's attestation extension; refuses it anywhere else in the chain.
// Google: "Only the first occurrence of the extension in the chain [from the root] can be
// trusted"; a further one below it can only come from someone extending the chain with an
// attested key. Accepting it only in the leaf, once, is the strict form of that rule: KeyMint
// never puts it anywhere else.
std::optional<std::string> find_extension(const std::vector<X509Ptr>& chain, AttestationVerdict* v) {
  ObjectPtr oid(OBJ_txt2obj(std::string(kKeyDescriptionOid).c_str(), 1));
  CS_CHECK(oid) << "OID constant";
  for (size_t i = 1; i < chain.size(); ++i) {
    if (X509_get_ext_by_OBJ(chain[i].get(), oid.get(), -1) >= 0) {
      *v = refuse(*v, Refusal::MalformedExtension,
                  "attestation extension in " + certificate_name(i, chain[i].get()) + ", not only in the leaf");
      return std::nullopt;
    }
  }
  const int at = X509_get_ext_by_OBJ(chain[0].get(), oid.get(), -1);
  if (at < 0) {
    *v = refuse(*v, Refusal::MissingExtension,
                "no attestation extension (" + std::string(kKeyDescriptionOid) + ") in the leaf certificate");
    return std::nullopt;
  }
  if (X509_get_ext_by_OBJ(chain[0].get(), oid.get(), at) >= 0) {
    *v = refuse(*v, Refusal::MalformedExtension, "attestation extension repeated in the leaf certificate");
    return std::nullopt;
  }
  const ASN1_OCTET_STRING* data = X509_EXTENSION_get_data(X509_get_ext(chain[0].get(), at));
  return std::string(reinterpret_cast<const char*>(ASN1_STRING_get0_data(data)),
                     static_cast<size_t>(ASN1_STRING_length(data)));
}

const char* short_level(SecurityLevel level) {
  return level == SecurityLevel::StrongBox            ? "StrongBox"
         : level == SecurityLevel::TrustedEnvironment ? "TEE"
                                                      : "Software";
}

std::string hex_of(std::string_view raw) {
  return to_hex(reinterpret_cast<const unsigned char*>(raw.data()), raw.size());
}

// Why the key's app is not one `allowed` lists ("" when it is).
std::string app_problem(const std::optional<ApplicationId>& app, const std::vector<AllowedApp>& allowed) {
  if (!app || app->packages.empty()) return "no attestationApplicationId (the app that asked for the key is unknown)";
  for (const std::string& package : app->packages) {
    bool ok = false;
    for (const AllowedApp& a : allowed) {
      if (a.package != package) continue;
      if (a.signature_digest.empty()) ok = true;
      for (const std::string& d : app->signature_digests) ok = ok || d == a.signature_digest;
    }
    if (!ok) {
      return "app " + package +
             (app->signature_digests.empty() ? "" : " signed by " + hex_of(app->signature_digests[0])) +
             " is not an allowed --attestation-app";
    }
  }
  return {};
}

// What the hub pins: the leaf's key, the boot key and state, the app.
AttestedKeyFacts key_facts(X509* leaf, const KeyDescription& kd) {
  AttestedKeyFacts f;
  f.key_spki = public_key_der(leaf);
  f.challenge = kd.attestation_challenge;
  if (const auto& rot = kd.hardware_enforced.root_of_trust) {
    f.verified_boot_key = rot->verified_boot_key;
    f.boot_state = rot->verified_boot_state;
    f.device_locked = rot->device_locked;
  }
  const std::optional<ApplicationId>& app =
      kd.hardware_enforced.application_id ? kd.hardware_enforced.application_id : kd.software_enforced.application_id;
  if (app) {
    f.app_packages = app->packages;
    f.app_digests = app->signature_digests;
  }
  return f;
}

// The KeyDescription checks, in Refusal order, after the chain is known good.
AttestationVerdict check_description(const KeyDescription& kd, std::string_view expected_challenge,
                                     const AttestationPolicy& policy, AttestationVerdict v) {
  v.security_level = kd.attestation_security_level;
  v.attestation_version = kd.attestation_version;
  v.os_patch_level = kd.hardware_enforced.os_patch_level.value_or(0);
  for (const auto& [name, level] : {std::pair{"attestationSecurityLevel", kd.attestation_security_level},
                                    std::pair{"keyMintSecurityLevel", kd.keymint_security_level}}) {
    if (level == SecurityLevel::Software) {
      return refuse(v, Refusal::SoftwareOnly, std::string("software-only attestation (") + name + " Software)");
    }
  }
  if (kd.attestation_challenge.size() != expected_challenge.size() ||
      CRYPTO_memcmp(kd.attestation_challenge.data(), expected_challenge.data(), expected_challenge.size()) != 0) {
    return refuse(v, Refusal::WrongChallenge, "the attested challenge is not the one this hub issued");
  }
  const std::optional<RootOfTrust>& rot = kd.hardware_enforced.root_of_trust;
  if (!rot) {
    return refuse(v, Refusal::NoRootOfTrust,
                  kd.software_enforced.root_of_trust ? "rootOfTrust is only software-enforced"
                                                     : "no hardware-enforced rootOfTrust");
  }
  if (!rot->device_locked) return refuse(v, Refusal::BootloaderUnlocked, "bootloader unlocked (deviceLocked false)");
  if (rot->verified_boot_state != VerifiedBootState::Verified) {
    return refuse(
        v, Refusal::BootNotVerified,
        std::string("verified boot state ") + verified_boot_state_name(rot->verified_boot_state) + ", not Verified");
  }
  if (policy.min_os_patch_level > 0) {
    const std::string minimum = "minimum " + std::to_string(policy.min_os_patch_level);
    if (!kd.hardware_enforced.os_patch_level) {
      return refuse(v, Refusal::PatchTooOld,
                    std::string(kd.software_enforced.os_patch_level ? "osPatchLevel is only software-enforced"
                                                                    : "no hardware-enforced osPatchLevel") +
                        " (" + minimum + ")");
    }
    if (*kd.hardware_enforced.os_patch_level < policy.min_os_patch_level) {
      return refuse(v, Refusal::PatchTooOld,
                    "OS patch level " + std::to_string(*kd.hardware_enforced.os_patch_level) + " below " + minimum);
    }
  }
  if (!policy.allowed_apps.empty()) {
    const std::optional<ApplicationId>& app =
        kd.hardware_enforced.application_id ? kd.hardware_enforced.application_id : kd.software_enforced.application_id;
    if (std::string why = app_problem(app, policy.allowed_apps); !why.empty()) {
      return refuse(v, Refusal::WrongApp, why);
    }
  }
  return v;
}

}  // namespace

const char* refusal_name(Refusal refusal) {
  switch (refusal) {
    case Refusal::None:
      return "none";
    case Refusal::Misconfigured:
      return "misconfigured";
    case Refusal::MalformedEvidence:
      return "malformed_evidence";
    case Refusal::UntrustedChain:
      return "untrusted_chain";
    case Refusal::Expired:
      return "expired";
    case Refusal::NotYetValid:
      return "not_yet_valid";
    case Refusal::Revoked:
      return "revoked";
    case Refusal::MissingExtension:
      return "missing_extension";
    case Refusal::MalformedExtension:
      return "malformed_extension";
    case Refusal::SoftwareOnly:
      return "software_only";
    case Refusal::WrongChallenge:
      return "wrong_challenge";
    case Refusal::NoRootOfTrust:
      return "no_root_of_trust";
    case Refusal::BootloaderUnlocked:
      return "bootloader_unlocked";
    case Refusal::BootNotVerified:
      return "boot_not_verified";
    case Refusal::PatchTooOld:
      return "patch_too_old";
    case Refusal::WrongApp:
      return "wrong_app";
    case Refusal::BadSignature:
      return "bad_signature";
    case Refusal::KeyChanged:
      return "key_changed";
  }
  return "unknown";
}

AttestationPolicy default_attestation_policy() {
  Result<std::vector<std::string>> roots = parse_pem_certificates(google_attestation_roots_pem(), "google_roots.pem");
  CS_CHECK(roots.ok()) << roots.status().to_string();  // built in; google_roots_test guards it
  return AttestationPolicy{std::move(roots).value(), 0, nullptr, {}};
}

AttestationVerdict verify_attestation(const AttestationEvidence& evidence, std::string_view expected_challenge,
                                      const AttestationPolicy& policy, std::time_t now) {
  const OpenSslErrorScope errors;
  AttestationVerdict v;
  if (expected_challenge.size() != kChallengeBytes) {
    return refuse(v, Refusal::Misconfigured, "the expected challenge must be 32 bytes");
  }
  std::vector<X509Ptr> roots;
  for (size_t i = 0; i < policy.trusted_roots_pem.size(); ++i) {
    Result<std::vector<X509Ptr>> parsed = read_pem(policy.trusted_roots_pem[i], "trusted root " + std::to_string(i));
    if (!parsed.ok()) return refuse(v, Refusal::Misconfigured, parsed.status().message());
    for (X509Ptr& r : parsed.value()) roots.push_back(std::move(r));
  }
  if (roots.empty()) return refuse(v, Refusal::Misconfigured, "no trusted attestation roots configured");

  const size_t n = evidence.chain_der.size();
  if (n == 0) return refuse(v, Refusal::MalformedEvidence, "empty certificate chain");
  if (n > kMaxEvidenceCertificates) {
    return refuse(
        v, Refusal::MalformedEvidence,
        "too many certificates: " + std::to_string(n) + " (at most " + std::to_string(kMaxEvidenceCertificates) + ")");
  }
  if (evidence.signature_der.empty() || evidence.signature_der.size() > kMaxEvidenceSignatureBytes) {
    return refuse(v, Refusal::MalformedEvidence, "signature missing or too large");
  }
  std::vector<X509Ptr> chain;
  for (size_t i = 0; i < n; ++i) {
    if (evidence.chain_der[i].size() > kMaxEvidenceCertificateBytes) {
      return refuse(v, Refusal::MalformedEvidence, certificate_name(i, nullptr) + " is larger than 16 KiB");
    }
    X509Ptr cert = certificate_from_der(evidence.chain_der[i]);
    if (!cert) {
      return refuse(v, Refusal::MalformedEvidence, certificate_name(i, nullptr) + " is not a DER X.509 certificate");
    }
    chain.push_back(std::move(cert));
  }

  std::vector<X509Ptr> path;
  if (std::optional<ChainRefusal> r = verify_chain(chain, roots, now, &path)) return refuse(v, r->refusal, r->reason);

  if (policy.revoked != nullptr) {
    // Every presented certificate, and the trusted root the path ended at when that is another
    // certificate (a re-issue, or a root the device did not send).
    std::vector<std::pair<X509*, std::string>> checked;
    for (size_t i = 0; i < n; ++i) checked.emplace_back(chain[i].get(), certificate_name(i, chain[i].get()));
    if (path.size() > n || X509_cmp(path.back().get(), chain.back().get()) != 0) {
      checked.emplace_back(path.back().get(), "the trusted root");
    }
    for (const auto& [cert, who] : checked) {
      const std::string serial = serial_hex(cert);
      if (const RevocationEntry* e = policy.revoked->find(serial)) {
        return refuse(v, Refusal::Revoked,
                      "revoked serial " + serial + " in " + who + ": " + (e->status.empty() ? "listed" : e->status) +
                          (e->reason.empty() ? "" : " (" + e->reason + ")"));
      }
    }
  }

  const std::optional<std::string> ext = find_extension(chain, &v);
  if (!ext) return v;
  Result<KeyDescription> kd = parse_key_description(*ext);
  if (!kd.ok()) return refuse(v, Refusal::MalformedExtension, "attestation extension: " + kd.status().message());
  v.key = key_facts(chain[0].get(), *kd);
  v = check_description(*kd, expected_challenge, policy, v);
  if (v.refusal != Refusal::None) return v;

  if (std::string why = signature_problem(X509_get0_pubkey(chain[0].get()), expected_challenge, evidence.signature_der);
      !why.empty()) {
    return refuse(v, Refusal::BadSignature, "over the challenge: " + why);
  }
  v.attested = true;
  v.reason = std::string(short_level(kd->attestation_security_level)) + ", KeyMint " +
             std::to_string(kd->keymint_version) + ", verified boot, locked, OS patch " +
             (kd->hardware_enforced.os_patch_level ? std::to_string(*kd->hardware_enforced.os_patch_level)
                                                   : std::string("unknown"));
  return v;
}

std::string attestation_challenge(std::string_view nonce_bytes, std::string_view public_key_bytes) {
  MdCtxPtr md(EVP_MD_CTX_new());
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  CS_CHECK(md && EVP_DigestInit_ex(md.get(), EVP_sha256(), nullptr) == 1 &&
           EVP_DigestUpdate(md.get(), nonce_bytes.data(), nonce_bytes.size()) == 1 &&
           EVP_DigestUpdate(md.get(), public_key_bytes.data(), public_key_bytes.size()) == 1 &&
           EVP_DigestFinal_ex(md.get(), out, &size) == 1)
      << "SHA-256 unavailable";
  return std::string(reinterpret_cast<const char*>(out), size);
}

Result<std::vector<std::string>> parse_pem_certificates(std::string_view pem, const std::string& what) {
  CS_ASSIGN_OR_RETURN(std::vector<X509Ptr> certs, read_pem(pem, what));
  std::vector<std::string> out;
  for (const X509Ptr& c : certs) out.push_back(to_pem(c.get()));
  return out;
}

Result<std::vector<std::string>> load_pem_certificates(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::not_found(path + ": cannot read");
  std::string text(kMaxRootsFileBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  if (text.size() > kMaxRootsFileBytes) return Status::invalid_argument(path + ": larger than 1 MiB");
  return parse_pem_certificates(text, path);
}

Result<AllowedApp> parse_allowed_app(std::string_view text) {
  const size_t colon = text.find(':');
  AllowedApp app;
  app.package = std::string(text.substr(0, colon));
  const auto bad = [&] {
    return Status::invalid_argument("--attestation-app " + std::string(text) +
                                    ": want PACKAGE or PACKAGE:SIGNING_DIGEST (64 hex digits, SHA-256)");
  };
  if (app.package.empty() || app.package.size() > 255 || app.package.find_first_of(" \t\n") != std::string::npos) {
    return bad();
  }
  if (colon != std::string_view::npos) {
    unsigned char digest[32];
    if (!from_hex(text.substr(colon + 1), digest, sizeof(digest))) return bad();
    app.signature_digest.assign(reinterpret_cast<const char*>(digest), sizeof(digest));
  }
  return app;
}

std::optional<std::string> registration_challenge(std::string_view nonce_hex, std::string_view device_id) {
  unsigned char nonce[32];
  unsigned char key[32];
  if (!from_hex(nonce_hex, nonce, sizeof(nonce)) || !from_hex(device_id, key, sizeof(key))) return std::nullopt;
  return attestation_challenge(std::string_view(reinterpret_cast<const char*>(nonce), sizeof(nonce)),
                               std::string_view(reinterpret_cast<const char*>(key), sizeof(key)));
}

}  // namespace cellserve::fleet::attest
