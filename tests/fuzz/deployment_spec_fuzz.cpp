// libFuzzer target: the deployment spec reader, from both of its doors. Each input is read as a
// TOML file (toml_to_json, as `cellserve deploy spec.toml`) and as a JSON body (as POST
// /api/v1/deployments); whatever parse_deployment_spec accepts must survive the round trip the
// hub makes when it lists a spec (deployment_spec_json() of it is read back to the same spec) and
// when it stores one (deployment_spec_document() of it reads back equal). The size and LoRA-reference helpers get the
// raw input too.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include "fleet/spec/deployment_spec.h"

namespace {

using namespace cellserve::fleet;

void check_round_trip(const boost::json::value& doc) {
  auto spec = parse_deployment_spec(doc);
  if (!spec.ok()) return;
  const boost::json::object written = deployment_spec_json(*spec, /*with_secrets=*/true);
  auto again = parse_deployment_spec(written);
  if (!again.ok()) {
    std::fprintf(stderr, "deployment_spec_json wrote a spec its reader refuses: %s\n%s\n",
                 again.status().to_string().c_str(), boost::json::serialize(written).c_str());
    std::abort();
  }
  const boost::json::object rewritten = deployment_spec_json(*again, /*with_secrets=*/true);
  if (rewritten != written) {
    std::fprintf(stderr, "the spec changed over a round trip:\n%s\n%s\n", boost::json::serialize(written).c_str(),
                 boost::json::serialize(rewritten).c_str());
    std::abort();
  }
  // What the store keeps must read back to the same spec, field for field, bit for bit.
  const std::string stored = deployment_spec_document(*spec);
  auto back = read_deployment_spec_document(stored);
  if (!back.ok() || !(*back == *spec)) {
    std::fprintf(stderr, "the stored document does not read back to the spec (%s):\n%s\n",
                 back.ok() ? "a field differs" : back.status().to_string().c_str(), stored.c_str());
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto doc = toml_to_json(text, "spec.toml"); doc.ok()) check_round_trip(*doc);
  boost::system::error_code ec;
  const boost::json::value doc = boost::json::parse(text, ec);
  if (!ec) check_round_trip(doc);
  volatile uint64_t sink = 0;
  if (auto bytes = parse_size(text); bytes.ok()) sink = sink + *bytes;
  if (auto ref = decode_lora_ref(text); ref.ok()) {
    auto again = decode_lora_ref(encode_lora_ref(*ref));
    if (!again.ok() || again->url != ref->url || again->sha256 != ref->sha256 || again->scale != ref->scale) {
      std::fprintf(stderr, "a LoRA reference does not survive encode/decode\n");
      std::abort();
    }
  }
  return 0;
}
