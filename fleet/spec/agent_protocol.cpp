#include "fleet/spec/agent_protocol.h"

#include <cctype>
#include <cmath>
#include <cstdio>

#include <boost/json.hpp>

#include "fleet/crypto/hmac.h"
#include "fleet/spec/deployment_spec.h"
#include "fleet/spec/json_number.h"
#include "fleet/spec/peer_text.h"

namespace cellserve::fleet {
namespace {

namespace json = boost::json;

Status bad(const std::string& what) { return Status::invalid_argument(what); }

// Far above any real slot count (the scheduler allows 32), so only garbage is refused.
constexpr int kMaxReportedSlots = 4096;
// Every number a device reports is bounded before it is cast or compared: beyond these it is
// garbage (or an attempt to win every match and route), never a real device.
constexpr double kMaxRamBytes = 0x1p50;   // 1 PiB
constexpr double kMaxDiskBytes = 0x1p60;  // 1 EiB
constexpr double kMaxTokensPerSecond = 1e7;
constexpr double kMaxPricePerDay = 1e9;
constexpr size_t kMaxCpuFeatures = 256;

Result<std::string> get_string(const json::object& o, std::string_view key, const std::string& where) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr || v->is_null()) return std::string();
  if (!v->is_string()) return bad(where + "." + std::string(key) + " must be a string");
  return std::string(v->as_string());
}

Result<double> get_number(const json::object& o, std::string_view key, const std::string& where) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr || v->is_null()) return 0.0;
  const std::optional<double> number = json_as_number(*v);
  if (!number) return bad(where + "." + std::string(key) + " must be a number");
  const double d = *number;
  if (!std::isfinite(d) || d < 0) return bad(where + "." + std::string(key) + " must be a non-negative number");
  return d;
}

// A number from the peer in [0, max]; absent or null is 0.
Result<double> get_bounded(const json::object& o, std::string_view key, const std::string& where, double max) {
  CS_ASSIGN_OR_RETURN(const double d, get_number(o, key, where));
  if (d > max) {
    char limit[32];
    std::snprintf(limit, sizeof(limit), "%.17g", max);
    return bad(where + "." + std::string(key) + " must be between 0 and " + limit);
  }
  return d;
}

Result<int> get_int(const json::object& o, std::string_view key, const std::string& where, int max) {
  CS_ASSIGN_OR_RETURN(const double d, get_number(o, key, where));
  if (d != std::floor(d) || d > max)
    return bad(where + "." + std::string(key) + " must be an integer <= " + std::to_string(max));
  return static_cast<int>(d);
}

Result<bool> get_bool(const json::object& o, std::string_view key, const std::string& where) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr || v->is_null()) return false;
  if (!v->is_bool()) return bad(where + "." + std::string(key) + " must be true or false");
  return v->as_bool();
}

Result<std::vector<std::string>> get_strings(const json::object& o, std::string_view key, const std::string& where) {
  std::vector<std::string> out;
  const json::value* v = o.if_contains(key);
  if (v == nullptr || v->is_null()) return out;
  if (!v->is_array()) return bad(where + "." + std::string(key) + " must be a list of strings");
  for (const json::value& e : v->as_array()) {
    if (!e.is_string()) return bad(where + "." + std::string(key) + " must be a list of strings");
    out.emplace_back(e.as_string());
  }
  return out;
}

Result<const json::object*> get_object(const json::value& v, const std::string& where) {
  if (!v.is_object()) return bad(where + " must be an object");
  return &v.as_object();
}

}  // namespace

std::string hub_origin(bool tls, std::string_view host, int port) {
  std::string out = tls ? "https://" : "http://";
  for (const char c : host) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out + ":" + std::to_string(port);
}

std::string tunnel_signature_message(std::string_view origin, std::string_view challenge) {
  return std::string(kTunnelProtocol) + " " + std::string(origin) + " " + std::string(challenge);
}

bool valid_challenge(std::string_view challenge) {
  if (challenge.size() != 64) return false;
  for (const char c : challenge) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

Result<json::value> parse_json(std::string_view text, const std::string& what) {
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec) return Status::invalid_argument(what + ": not JSON: " + ec.message());
  return v;
}

json::value to_json(const AgentInfo& info) {
  const ProcessorSpecs& s = info.specs;
  return json::object{{"name", info.name},
                      {"price_per_day", info.price_per_day},
                      {"version", info.version},
                      {"simulated", info.simulated},
                      {"specs", json::object{{"ram_bytes", s.ram_bytes},
                                             {"free_disk_bytes", s.free_disk_bytes},
                                             {"cores", s.cores},
                                             {"big_cores", s.big_cores},
                                             {"arch", s.arch},
                                             {"os", s.os},
                                             {"cpu_features", json::value_from(s.cpu_features)}}},
                      {"benchmark", json::object{{"prefill_tps", info.benchmark.prefill_tps},
                                                 {"decode_tps", info.benchmark.decode_tps},
                                                 {"shape", info.benchmark.shape}}},
                      {"attestation", info.attestation}};
}

Result<AgentInfo> agent_info_from_json(const json::value& v) {
  CS_ASSIGN_OR_RETURN(const json::object* o, get_object(v, "info"));
  AgentInfo info;
  // Text the device chooses reaches operators' tables and logs: bounded, no control characters.
  CS_ASSIGN_OR_RETURN(const std::string name, get_string(*o, "name", "info"));
  info.name = peer_text(name, kMaxPeerNameChars);
  CS_ASSIGN_OR_RETURN(info.price_per_day, get_bounded(*o, "price_per_day", "info", kMaxPricePerDay));
  CS_ASSIGN_OR_RETURN(const std::string version, get_string(*o, "version", "info"));
  info.version = peer_text(version, kMaxPeerNameChars);
  CS_ASSIGN_OR_RETURN(info.simulated, get_bool(*o, "simulated", "info"));
  if (const json::value* specs = o->if_contains("specs")) {
    CS_ASSIGN_OR_RETURN(const json::object* s, get_object(*specs, "info.specs"));
    CS_ASSIGN_OR_RETURN(const double ram, get_bounded(*s, "ram_bytes", "info.specs", kMaxRamBytes));
    CS_ASSIGN_OR_RETURN(const double disk, get_bounded(*s, "free_disk_bytes", "info.specs", kMaxDiskBytes));
    info.specs.ram_bytes = static_cast<uint64_t>(ram);  // in range: checked above
    info.specs.free_disk_bytes = static_cast<uint64_t>(disk);
    CS_ASSIGN_OR_RETURN(info.specs.cores, get_int(*s, "cores", "info.specs", 4096));
    CS_ASSIGN_OR_RETURN(info.specs.big_cores, get_int(*s, "big_cores", "info.specs", 4096));
    CS_ASSIGN_OR_RETURN(const std::string arch, get_string(*s, "arch", "info.specs"));
    info.specs.arch = peer_text(arch, kMaxPeerNameChars);
    CS_ASSIGN_OR_RETURN(const std::string os, get_string(*s, "os", "info.specs"));
    info.specs.os = peer_text(os, kMaxPeerNameChars);
    CS_ASSIGN_OR_RETURN(std::vector<std::string> features, get_strings(*s, "cpu_features", "info.specs"));
    if (features.size() > kMaxCpuFeatures) {
      return bad("info.specs.cpu_features must list at most " + std::to_string(kMaxCpuFeatures) + " features");
    }
    for (std::string& f : features) f = peer_text(f, kMaxPeerNameChars);
    info.specs.cpu_features = std::move(features);
  }
  if (const json::value* evidence = o->if_contains("attestation"); evidence != nullptr && !evidence->is_null()) {
    if (!evidence->is_object()) return bad("info.attestation must be an object");
    info.attestation = *evidence;
  }
  if (const json::value* bench = o->if_contains("benchmark")) {
    CS_ASSIGN_OR_RETURN(const json::object* b, get_object(*bench, "info.benchmark"));
    CS_ASSIGN_OR_RETURN(info.benchmark.prefill_tps,
                        get_bounded(*b, "prefill_tps", "info.benchmark", kMaxTokensPerSecond));
    CS_ASSIGN_OR_RETURN(info.benchmark.decode_tps,
                        get_bounded(*b, "decode_tps", "info.benchmark", kMaxTokensPerSecond));
    CS_ASSIGN_OR_RETURN(const std::string shape, get_string(*b, "shape", "info.benchmark"));
    info.benchmark.shape = peer_text(shape, kMaxPeerNameChars);
  }
  return info;
}

json::value to_json(const TunedSettings& t) {
  return json::object{{"threads", t.threads},       {"prefill_chunk", t.prefill_chunk},
                      {"parallel", t.parallel},     {"ctx_size", t.ctx_size},
                      {"batch_size", t.batch_size}, {"autotuned", t.autotuned},
                      {"kv_type", t.kv_type},       {"cached", t.cached}};
}

Result<TunedSettings> tuned_settings_from_json(const json::value& v) {
  CS_ASSIGN_OR_RETURN(const json::object* o, get_object(v, "replica.tuned"));
  const std::string where = "replica.tuned";
  TunedSettings t;
  CS_ASSIGN_OR_RETURN(t.threads, get_int(*o, "threads", where, kMaxTunedThreads));
  CS_ASSIGN_OR_RETURN(t.prefill_chunk, get_int(*o, "prefill_chunk", where, kMaxTunedChunk));
  CS_ASSIGN_OR_RETURN(t.parallel, get_int(*o, "parallel", where, kMaxReportedSlots));
  CS_ASSIGN_OR_RETURN(t.ctx_size, get_int(*o, "ctx_size", where, kMaxTunedCtx));
  CS_ASSIGN_OR_RETURN(t.batch_size, get_int(*o, "batch_size", where, kMaxTunedChunk));
  CS_ASSIGN_OR_RETURN(t.autotuned, get_bool(*o, "autotuned", where));
  CS_ASSIGN_OR_RETURN(t.kv_type, get_string(*o, "kv_type", where));
  if (t.kv_type.size() > 16) return bad(where + ".kv_type must be a KV cache type's name");
  CS_ASSIGN_OR_RETURN(t.cached, get_bool(*o, "cached", where));
  return t;
}

json::value to_json(const std::vector<ReplicaReport>& reports) {
  json::array out;
  for (const ReplicaReport& r : reports) {
    out.push_back(json::object{{"deployment", r.deployment},
                               {"index", r.index},
                               {"state", replica_state_name(r.state)},
                               {"progress", r.progress},
                               {"detail", r.detail},
                               {"prefill_tps", r.prefill_tps},
                               {"decode_tps", r.decode_tps},
                               {"slots", r.slots},
                               {"free_slots", r.free_slots},
                               {"prefill_done", r.prefill_done},
                               {"prefill_total", r.prefill_total},
                               {"gave_up", r.gave_up},
                               {"model_sha256", r.model_sha256},
                               {"secrets_version", r.secrets_version},
                               {"secrets_proof", r.secrets_proof},
                               {"tuned", r.tuned ? to_json(*r.tuned) : json::value(nullptr)}});
  }
  return json::object{{"replicas", std::move(out)}};
}

Result<std::vector<ReplicaReport>> replica_reports_from_json(const json::value& v) {
  CS_ASSIGN_OR_RETURN(const json::object* o, get_object(v, "status"));
  const json::value* list = o->if_contains("replicas");
  if (list == nullptr || !list->is_array()) return bad("status.replicas must be a list");
  std::vector<ReplicaReport> out;
  for (const json::value& e : list->as_array()) {
    CS_ASSIGN_OR_RETURN(const json::object* r, get_object(e, "status.replicas[]"));
    ReplicaReport rep;
    CS_ASSIGN_OR_RETURN(rep.deployment, get_string(*r, "deployment", "replica"));
    CS_ASSIGN_OR_RETURN(rep.index, get_int(*r, "index", "replica", 1 << 20));
    CS_ASSIGN_OR_RETURN(const std::string state, get_string(*r, "state", "replica"));
    const auto parsed = parse_replica_state(state);
    if (!parsed) return bad("replica.state \"" + state + "\" is not a replica state");
    rep.state = *parsed;
    CS_ASSIGN_OR_RETURN(rep.progress, get_number(*r, "progress", "replica"));
    rep.progress = std::min(rep.progress, 1.0);
    CS_ASSIGN_OR_RETURN(const std::string detail, get_string(*r, "detail", "replica"));
    rep.detail = peer_text(detail, kMaxPeerDetailChars);  // shown in `fleet ls` and the API
    CS_ASSIGN_OR_RETURN(rep.prefill_tps, get_bounded(*r, "prefill_tps", "replica", kMaxTokensPerSecond));
    CS_ASSIGN_OR_RETURN(rep.decode_tps, get_bounded(*r, "decode_tps", "replica", kMaxTokensPerSecond));
    CS_ASSIGN_OR_RETURN(rep.slots, get_int(*r, "slots", "replica", kMaxReportedSlots));
    CS_ASSIGN_OR_RETURN(rep.free_slots, get_int(*r, "free_slots", "replica", kMaxReportedSlots));
    if (rep.free_slots > rep.slots) return bad("replica.free_slots must be <= replica.slots");
    CS_ASSIGN_OR_RETURN(rep.prefill_done, get_int(*r, "prefill_done", "replica", kMaxReportedPrefillTokens));
    CS_ASSIGN_OR_RETURN(rep.prefill_total, get_int(*r, "prefill_total", "replica", kMaxReportedPrefillTokens));
    if (rep.prefill_done > rep.prefill_total) return bad("replica.prefill_done must be <= replica.prefill_total");
    CS_ASSIGN_OR_RETURN(rep.gave_up, get_bool(*r, "gave_up", "replica"));
    CS_ASSIGN_OR_RETURN(rep.model_sha256, get_string(*r, "model_sha256", "replica"));
    if (rep.model_sha256.size() > 64) return bad("replica.model_sha256 must be 64 hex digits");
    CS_ASSIGN_OR_RETURN(rep.secrets_version, get_int(*r, "secrets_version", "replica", kMaxSecretsVersion));
    CS_ASSIGN_OR_RETURN(rep.secrets_proof, get_string(*r, "secrets_proof", "replica"));
    if (rep.secrets_proof.size() > 64) return bad("replica.secrets_proof must be 64 hex digits");
    if (const json::value* tuned = r->if_contains("tuned"); tuned != nullptr && !tuned->is_null()) {
      CS_ASSIGN_OR_RETURN(rep.tuned, tuned_settings_from_json(*tuned));
    }
    out.push_back(std::move(rep));
  }
  return out;
}

namespace {

// An assignment's engine section, each value within its bound (the serve stack checks the rest as
// it checks its flags).
Result<EngineSettings> engine_from_json(const json::value& v) {
  EngineSettings engine;
  CS_ASSIGN_OR_RETURN(const json::object* en, get_object(v, "assignment.engine"));
  CS_ASSIGN_OR_RETURN(engine.ctx_size, get_int(*en, "ctx_size", "engine", 1 << 20));
  CS_ASSIGN_OR_RETURN(engine.parallel, get_int(*en, "parallel", "engine", 32));
  CS_ASSIGN_OR_RETURN(engine.threads, get_int(*en, "threads", "engine", 256));
  CS_ASSIGN_OR_RETURN(engine.lora, get_strings(*en, "lora", "engine"));
  CS_ASSIGN_OR_RETURN(engine.simulated, get_bool(*en, "simulated", "engine"));
  // The serve settings: bounded here, checked by the serve stack as its flags are.
  EngineSettings& e = engine;
  CS_ASSIGN_OR_RETURN(e.chat_template, get_string(*en, "chat_template", "engine"));
  CS_ASSIGN_OR_RETURN(e.chat_template_jinja, get_string(*en, "chat_template_jinja", "engine"));
  CS_ASSIGN_OR_RETURN(e.kv_type, get_string(*en, "kv_type", "engine"));
  CS_ASSIGN_OR_RETURN(e.pooling, get_string(*en, "pooling", "engine"));
  if (e.chat_template.size() > 64 || e.kv_type.size() > 16 || e.pooling.size() > 16 ||
      e.chat_template_jinja.size() > kMaxInlineChatTemplateBytes) {
    return bad("assignment.engine: chat_template, chat_template_jinja, kv_type or pooling is too long");
  }
  CS_ASSIGN_OR_RETURN(e.batch_size, get_int(*en, "batch_size", "engine", 1 << 16));
  CS_ASSIGN_OR_RETURN(e.prefill_chunk, get_int(*en, "prefill_chunk", "engine", 1 << 16));
  CS_ASSIGN_OR_RETURN(e.embeddings, get_bool(*en, "embeddings", "engine"));
  CS_ASSIGN_OR_RETURN(e.mlock, get_bool(*en, "mlock", "engine"));
  CS_ASSIGN_OR_RETURN(e.special_in_content, get_bool(*en, "special_in_content", "engine"));
  if (const json::value* wv = en->if_contains("workload"); wv != nullptr && !wv->is_null()) {
    CS_ASSIGN_OR_RETURN(const json::object* w, get_object(*wv, "assignment.engine.workload"));
    Workload& wl = e.workload;
    CS_ASSIGN_OR_RETURN(wl.prompt_tokens, get_int(*w, "prompt_tokens", "engine.workload", 1 << 20));
    CS_ASSIGN_OR_RETURN(wl.max_tokens, get_int(*w, "max_tokens", "engine.workload", 1 << 20));
    CS_ASSIGN_OR_RETURN(wl.concurrency, get_int(*w, "concurrency", "engine.workload", 256));
    CS_ASSIGN_OR_RETURN(wl.objective, get_string(*w, "objective", "engine.workload"));
    CS_ASSIGN_OR_RETURN(wl.autotune_seconds, get_int(*w, "autotune_seconds", "engine.workload", 3600));
    if (wl.objective != "throughput" && wl.objective != "latency") {
      return bad("assignment.engine.workload.objective must be throughput or latency");
    }
    wl.max_tokens = std::max(wl.max_tokens, 1);
    wl.concurrency = std::max(wl.concurrency, 1);
    wl.autotune_seconds = std::max(wl.autotune_seconds, 1);
  }
  return engine;
}

}  // namespace

json::value to_json(const std::vector<AssignmentMessage>& assignments) {
  json::array out;
  for (const AssignmentMessage& a : assignments) {
    out.push_back(json::object{{"deployment", a.deployment},
                               {"index", a.index},
                               {"model_url", a.model_url},
                               {"model_sha256", a.model_sha256},
                               {"engine", engine_settings_json(a.engine)},
                               {"files_token", a.files_token},
                               {"secrets_version", a.secrets_version},
                               {"sealed_secrets", a.sealed_secrets},
                               {"secrets_challenge", a.secrets_challenge}});
  }
  return json::object{{"assignments", std::move(out)}};
}

Result<std::vector<AssignmentMessage>> assignments_from_json(const json::value& v) {
  CS_ASSIGN_OR_RETURN(const json::object* o, get_object(v, "body"));
  const json::value* list = o->if_contains("assignments");
  if (list == nullptr || !list->is_array()) return bad("assignments must be a list");
  std::vector<AssignmentMessage> out;
  for (const json::value& e : list->as_array()) {
    CS_ASSIGN_OR_RETURN(const json::object* a, get_object(e, "assignments[]"));
    AssignmentMessage m;
    CS_ASSIGN_OR_RETURN(m.deployment, get_string(*a, "deployment", "assignment"));
    CS_ASSIGN_OR_RETURN(m.index, get_int(*a, "index", "assignment", 1 << 20));
    CS_ASSIGN_OR_RETURN(m.model_url, get_string(*a, "model_url", "assignment"));
    CS_ASSIGN_OR_RETURN(m.model_sha256, get_string(*a, "model_sha256", "assignment"));
    CS_ASSIGN_OR_RETURN(m.files_token, get_string(*a, "files_token", "assignment"));
    if (m.files_token.size() > 256) return bad("assignment.files_token is too long");
    CS_ASSIGN_OR_RETURN(m.secrets_version, get_int(*a, "secrets_version", "assignment", kMaxSecretsVersion));
    CS_ASSIGN_OR_RETURN(m.sealed_secrets, get_string(*a, "sealed_secrets", "assignment"));
    if (m.sealed_secrets.size() > kMaxSealedSecretsBytes) return bad("assignment.sealed_secrets is too long");
    CS_ASSIGN_OR_RETURN(m.secrets_challenge, get_string(*a, "secrets_challenge", "assignment"));
    if (m.secrets_challenge.size() > 64) return bad("assignment.secrets_challenge must be 64 hex digits");
    if (m.deployment.empty() || m.model_url.empty() || m.model_sha256.size() != 64) {
      return bad("assignment needs deployment, model_url and a 64-digit model_sha256");
    }
    if (const json::value* eng = a->if_contains("engine"); eng != nullptr && !eng->is_null()) {
      CS_ASSIGN_OR_RETURN(m.engine, engine_from_json(*eng));
    }
    out.push_back(std::move(m));
  }
  return out;
}

std::string secrets_payload(const DeploymentSecrets& secrets) {
  json::object env;
  for (const auto& [name, value] : secrets.env) env[name] = value;
  return json::serialize(
      json::object{{"replica_key", secrets.replica_key}, {"env", std::move(env)}, {"ack_key", secrets.ack_key}});
}

std::string secrets_ack_proof(std::string_view ack_key, std::string_view deployment, int version,
                              std::string_view challenge) {
  return hmac_sha256_hex(ack_key, "cellserve-secrets-ack/1 " + std::string(deployment) + " " + std::to_string(version) +
                                      " " + std::string(challenge));
}

Result<DeploymentSecrets> secrets_from_payload(std::string_view payload) {
  CS_ASSIGN_OR_RETURN(const json::value v, parse_json(payload, "the deployment's secrets"));
  CS_ASSIGN_OR_RETURN(const json::object* o, get_object(v, "secrets"));
  DeploymentSecrets out;
  CS_ASSIGN_OR_RETURN(out.replica_key, get_string(*o, "replica_key", "secrets"));
  CS_ASSIGN_OR_RETURN(out.ack_key, get_string(*o, "ack_key", "secrets"));
  if (out.ack_key.size() > 64) return bad("secrets.ack_key must be 64 hex digits");
  if (const json::value* env = o->if_contains("env"); env != nullptr && !env->is_null()) {
    CS_ASSIGN_OR_RETURN(const json::object* e, get_object(*env, "secrets.env"));
    for (const auto& kv : *e) {
      if (!kv.value().is_string()) return bad("secrets.env." + std::string(kv.key()) + " must be a string");
      out.env.emplace_back(std::string(kv.key()), std::string(kv.value().as_string()));
    }
  }
  return out;
}

}  // namespace cellserve::fleet
