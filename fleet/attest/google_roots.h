// Google's hardware attestation root certificates, as shipped in google_roots.pem (the build
// embeds the file; see that file for where the certificates come from and their fingerprints).
#pragma once

#include <string_view>

namespace cellserve::fleet::attest {

// The PEM text of fleet/attest/google_roots.pem, comments included.
std::string_view google_attestation_roots_pem();

}  // namespace cellserve::fleet::attest
