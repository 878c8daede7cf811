// Path validation of an attestation chain with OpenSSL (internal to fleet/attest).
#pragma once

#include <ctime>
#include <optional>
#include <string>
#include <vector>

#include "fleet/attest/attestation.h"
#include "fleet/attest/openssl_util.h"

namespace cellserve::fleet::attest {

struct ChainRefusal {
  Refusal refusal = Refusal::UntrustedChain;
  std::string reason;
};

// Verifies `presented` (leaf first) against `roots` at time `now`. On success returns nullopt
// and fills `verified` with the validated path, leaf first, ending at the trusted root used.
// Every presented certificate must be on that path in order; the presented last certificate
// may be a re-issued copy of the trusted root (same subject and key, self-signed).
std::optional<ChainRefusal> verify_chain(const std::vector<X509Ptr>& presented, const std::vector<X509Ptr>& roots,
                                         std::time_t now, std::vector<X509Ptr>* verified);

// "certificate 1 (intermediate)": how refusals name position `index` of a chain. The role is
// "leaf" at 0, else "root" for a self-issued `cert` and "intermediate" for another; none
// when `cert` is null (it did not parse).
std::string certificate_name(size_t index, const X509* cert);

}  // namespace cellserve::fleet::attest
