#include "fleet/attest/chain_check.h"

namespace cellserve::fleet::attest {
namespace {

std::optional<ChainRefusal> refuse(Refusal r, std::string reason) { return ChainRefusal{r, std::move(reason)}; }

std::string time_now_text(std::time_t now) {
  std::unique_ptr<ASN1_TIME, OpenSslDeleter<ASN1_TIME, ASN1_TIME_free>> t(ASN1_TIME_set(nullptr, now));
  return time_text(t.get());
}

// The refusal for a failed X509_verify_cert, naming the certificate OpenSSL stopped at.
// The path OpenSSL builds follows the presented order, so a depth below `presented` is that
// presented certificate; beyond it is the trusted root OpenSSL added.
ChainRefusal explain_failure(X509_STORE_CTX* ctx, size_t presented, std::time_t now) {
  const int error = X509_STORE_CTX_get_error(ctx);
  const int depth = X509_STORE_CTX_get_error_depth(ctx);
  const X509* cert = X509_STORE_CTX_get_current_cert(ctx);
  std::string who = depth < 0                                ? "the chain"
                    : static_cast<size_t>(depth) < presented ? certificate_name(static_cast<size_t>(depth), cert)
                                                             : "the trusted root";
  if (cert != nullptr) who += " \"" + subject_text(cert) + "\"";
  switch (error) {
    case X509_V_ERR_CERT_HAS_EXPIRED:
      return {Refusal::Expired, who + " expired at " + time_text(cert ? X509_get0_notAfter(cert) : nullptr) + " (now " +
                                    time_now_text(now) + ")"};
    case X509_V_ERR_CERT_NOT_YET_VALID:
      return {Refusal::NotYetValid, who + " is not valid until " +
                                        time_text(cert ? X509_get0_notBefore(cert) : nullptr) + " (now " +
                                        time_now_text(now) + ")"};
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
    case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
    case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
    case X509_V_ERR_CERT_UNTRUSTED:
      return {Refusal::UntrustedChain,
              "chain does not lead to a trusted root: " + who + ": " + X509_verify_cert_error_string(error)};
    default:
      return {Refusal::UntrustedChain, "chain does not verify: " + who + ": " + X509_verify_cert_error_string(error)};
  }
}

bool same_root(X509* presented, X509* trusted) {
  return X509_self_signed(presented, 1) == 1 &&
         X509_NAME_cmp(X509_get_subject_name(presented), X509_get_subject_name(trusted)) == 0 &&
         EVP_PKEY_eq(X509_get0_pubkey(presented), X509_get0_pubkey(trusted)) == 1;
}

}  // namespace

std::string certificate_name(size_t index, const X509* cert) {
  const std::string name = "certificate " + std::to_string(index);
  if (index == 0) return name + " (leaf)";
  if (cert == nullptr) return name;
  const bool self_issued = X509_NAME_cmp(X509_get_subject_name(cert), X509_get_issuer_name(cert)) == 0;
  return name + (self_issued ? " (root)" : " (intermediate)");
}

std::optional<ChainRefusal> verify_chain(const std::vector<X509Ptr>& presented, const std::vector<X509Ptr>& roots,
                                         std::time_t now, std::vector<X509Ptr>* verified) {
  StorePtr store(X509_STORE_new());
  StoreCtxPtr ctx(X509_STORE_CTX_new());
  X509StackPtr untrusted(sk_X509_new_null());
  if (!store || !ctx || !untrusted) return refuse(Refusal::Misconfigured, "out of memory");
  for (const X509Ptr& root : roots) {
    if (X509_STORE_add_cert(store.get(), root.get()) != 1) return refuse(Refusal::Misconfigured, "bad trusted root");
  }
  for (size_t i = 1; i < presented.size(); ++i) {
    if (sk_X509_push(untrusted.get(), presented[i].get()) <= 0) return refuse(Refusal::Misconfigured, "out of memory");
  }
  if (X509_STORE_CTX_init(ctx.get(), store.get(), presented[0].get(), untrusted.get()) != 1) {
    return refuse(Refusal::Misconfigured, "cannot start chain verification");
  }
  // The flags, and why:
  // - no X509_V_FLAG_PARTIAL_CHAIN: the path must end at a self-signed trusted root, never at
  //   an intermediate the device chose;
  // - no X509_V_FLAG_X509_STRICT: KeyMint leaf certificates and factory intermediates may lack
  //   the key identifiers (and critical flags) strict mode demands. OpenSSL still requires
  //   basicConstraints CA:TRUE (and keyCertSign where keyUsage is present) of every
  //   intermediate, so an attested key, whose certificate is never a CA, cannot sign a
  //   further "leaf" below itself;
  // - no purpose: the leaf is a keystore key, not a TLS peer; its extended key usage is not ours
  //   to check;
  // - no CRL checks: Google revokes through its status list (revocation_list.h), not CRLs;
  // - the time is the caller's `now` (X509_VERIFY_PARAM_set_time), so validity periods of every
  //   certificate, trusted root included, are checked against it;
  // - trusted certificates are looked up first (OpenSSL's default), which lets a chain ending
  //   at an expired re-issue of a root verify through the current one with the same key.
  X509_VERIFY_PARAM* param = X509_STORE_CTX_get0_param(ctx.get());
  X509_VERIFY_PARAM_set_time(param, now);
  X509_VERIFY_PARAM_set_depth(param, static_cast<int>(kMaxEvidenceCertificates));
  if (X509_verify_cert(ctx.get()) != 1) return explain_failure(ctx.get(), presented.size(), now);

  // get1 takes a reference to each certificate; the X509Ptrs own those, the stack goes.
  X509StackPtr path(X509_STORE_CTX_get1_chain(ctx.get()));
  verified->clear();
  if (!path) return refuse(Refusal::Misconfigured, "out of memory");
  for (int i = 0; i < sk_X509_num(path.get()); ++i) verified->emplace_back(sk_X509_value(path.get(), i));
  sk_X509_zero(path.get());

  // A certificate the path does not use proves nothing and is refused, so what the device sent
  // is exactly what was verified.
  for (size_t i = 0; i < presented.size(); ++i) {
    const std::string who = certificate_name(i, presented[i].get());
    if (i >= verified->size()) return refuse(Refusal::UntrustedChain, who + " is not on the verified path");
    if (X509_cmp(presented[i].get(), (*verified)[i].get()) == 0) continue;
    const bool last = i + 1 == presented.size() && i + 1 == verified->size();
    if (!last || !same_root(presented[i].get(), (*verified)[i].get())) {
      return refuse(Refusal::UntrustedChain, who + " is not on the verified path");
    }
  }
  return std::nullopt;
}

}  // namespace cellserve::fleet::attest
