// Deployment specs: what `cellserve deploy spec.toml` and POST /api/v1/deployments accept. The
// TOML file is turned into the same JSON tree the REST API takes, so one strict reader validates
// both: an unknown key, a wrong type or an absurd value is an error naming the key.
// docs/fleet.md shows a complete spec.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <boost/json/value.hpp>

#include "base/status.h"
#include "fleet/store/records.h"

namespace cellserve::fleet {

// The most replicas and spares one deployment may ask for. Replica addresses take up to 4
// digits; the hub's registry and routing are linear in a deployment's replicas.
inline constexpr int kMaxReplicas = 1000;
// [engine] chat_template_jinja: an inline template's largest size (real templates are < 20 KiB).
inline constexpr size_t kMaxInlineChatTemplateBytes = 64 * 1024;
inline constexpr int kMaxSpares = 1000;
static_assert(kMaxReplicas + kMaxSpares <= kSurgeIndexBase, "surge rows must never meet a scaled row");

// A deployment's secrets ([env]): at most this many, each value at most this long. They travel
// sealed with every assignment, so the bound keeps assignments small.
inline constexpr size_t kMaxEnvVars = 64;
inline constexpr size_t kMaxEnvValueBytes = 4096;
// Whether NAME=value may be one of a deployment's [env] entries; InvalidArgument names the
// variable, never the value.
Status check_env_entry(std::string_view name, std::string_view value);

// The TOML document as JSON (tables → objects, arrays → arrays, scalars → scalars; dates are
// rejected). InvalidArgument with "<source>:<line>:<column>: <reason>" on a syntax error.
Result<boost::json::value> toml_to_json(std::string_view text, const std::string& source);

// Reads and validates a spec (see deployment_spec.cpp for the accepted keys).
Result<DeploymentSpec> parse_deployment_spec(const boost::json::value& spec);

// The spec as JSON, in the shape parse_deployment_spec() reads. Secret values are replaced by
// "***" unless `with_secrets`.
boost::json::object deployment_spec_json(const DeploymentSpec& spec, bool with_secrets);

// The stored form of a spec (the hub's deployments table keeps it whole, beside the columns its
// queries filter and sort on): every field of DeploymentSpec under its member's name, sections
// as objects (requirements, engine, gateway), env as [[name, value], ...], values as they are held
// (no units, no validation: what was stored was accepted once; a double as the text of its
// shortest exact decimal, "2.5", so that it reads back bit for bit). A key the document lacks reads as
// the field's default in records.h, so documents stored before a field existed read as before.
// A new spec field: the struct (records.h), one line in spec_fields() in deployment_spec.cpp, the
// API form above if clients set it, and docs/fleet.md.
std::string deployment_spec_document(const DeploymentSpec& spec);
// DataLoss naming the key for anything deployment_spec_document() does not write.
Result<DeploymentSpec> read_deployment_spec_document(std::string_view text);
// A replica row's serving in the same form: model_url, model_sha256 and the engine section.
std::string serving_document(const Serving& serving);
Result<Serving> read_serving_document(std::string_view text);
// The documents' engine section, which the hub's assignments also carry (agent_protocol.h).
boost::json::object engine_settings_json(const EngineSettings& engine);

// A LoRA adapter a deployment applies: fetched and verified like the model.
struct LoraRef {
  std::string url;
  std::string sha256;
  double scale = 1;
};
// The form EngineSettings::lora stores: "<sha256> <scale> <url>" (none of the three has a space).
std::string encode_lora_ref(const LoraRef& ref);
// InvalidArgument for anything encode_lora_ref() does not produce.
Result<LoraRef> decode_lora_ref(std::string_view text);

// "12G", "512M", "12GiB", "1.5G", "4096" (bytes) → bytes; powers of 1024. InvalidArgument otherwise.
Result<uint64_t> parse_size(std::string_view text);

}  // namespace cellserve::fleet
