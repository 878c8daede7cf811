#include "fleet/spec/deployment_spec.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <set>
#include <sstream>
#include <utility>

#include <toml++/toml.h>
#include <boost/json.hpp>

#include "engine/chat/builtin_templates.h"
#include "engine/chat/chat_template.h"
#include "fleet/spec/autoscale_spec.h"
#include "fleet/spec/replica_address.h"
#include "fleet/spec/spec_fields.h"

namespace cellserve::fleet {
namespace {

namespace json = boost::json;

Result<json::value> node_to_json(const toml::node& node, const std::string& where) {
  if (const auto* t = node.as_table()) {
    json::object o;
    for (const auto& [key, value] : *t) {
      CS_ASSIGN_OR_RETURN(json::value v, node_to_json(value, where + "." + std::string(key.str())));
      o[key.str()] = std::move(v);
    }
    return json::value(std::move(o));
  }
  if (const auto* a = node.as_array()) {
    json::array out;
    for (size_t i = 0; i < a->size(); ++i) {
      CS_ASSIGN_OR_RETURN(json::value v, node_to_json((*a)[i], where + "[" + std::to_string(i) + "]"));
      out.push_back(std::move(v));
    }
    return json::value(std::move(out));
  }
  if (const auto* s = node.as_string()) return json::value(s->get());
  if (const auto* i = node.as_integer()) return json::value(i->get());
  if (const auto* f = node.as_floating_point()) return json::value(f->get());
  if (const auto* b = node.as_boolean()) return json::value(b->get());
  return Status::invalid_argument(where.substr(1) + ": dates and times are not accepted here");
}

bool valid_sha256(std::string_view s) {
  if (s.size() != 64) return false;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c)) && !(c >= 'a' && c <= 'f')) return false;
  }
  return true;
}

// A name clients send as `model`: what an OpenAI client may put in a JSON string and a log line
// without surprises.
bool valid_model_alias(std::string_view s) {
  if (s.empty() || s.size() > 128) return false;
  for (const char c : s) {
    if (c <= ' ' || c >= 0x7f || c == '"' || c == '\\') return false;
  }
  return true;
}

bool valid_env_name(std::string_view s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s.front()))) return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

Status read_size(SpecFields& f, std::string_view key, uint64_t* out) {
  const json::value* v = f.get(key);
  if (v == nullptr) return {};
  if (v->is_string()) {
    auto size = parse_size(v->as_string());
    if (!size.ok()) return Status::invalid_argument(f.name(key) + ": " + size.status().message());
    *out = *size;
    return {};
  }
  // A number of bytes has the bound a size in text has (parse_size), so that what the spec writes
  // back (format_size) reads again (found by the deployment_spec fuzzer).
  constexpr uint64_t kMaxSizeBytes = 1'000'000'000'000'000'000ULL;
  if ((v->is_int64() && v->as_int64() >= 0) || v->is_uint64()) {
    const uint64_t bytes = v->is_uint64() ? v->as_uint64() : static_cast<uint64_t>(v->as_int64());
    if (bytes > kMaxSizeBytes) return Status::invalid_argument(f.name(key) + ": more than 10^18 bytes");
    *out = bytes;
    return {};
  }
  return Status::invalid_argument(f.name(key) + " must be a size such as \"12G\" or a byte count");
}

std::string format_size(uint64_t bytes) {
  static const char* units[] = {"", "K", "M", "G", "T"};
  int u = 0;
  while (u < 4 && bytes % 1024 == 0 && bytes >= 1024) {
    bytes /= 1024;
    ++u;
  }
  return std::to_string(bytes) + units[u];
}

bool valid_model_url(std::string_view url) {
  return url.starts_with("http://") || url.starts_with("https://") || url.starts_with("hf://");
}

// engine.lora: [{url, sha256, scale}], each verified like the model.
Result<std::vector<std::string>> read_lora_list(SpecFields& engine) {
  std::vector<std::string> out;
  const json::value* v = engine.get("lora");
  if (v == nullptr) return out;
  if (!v->is_array()) return Status::invalid_argument("engine.lora must be a list of {url, sha256, scale} tables");
  for (size_t i = 0; i < v->as_array().size(); ++i) {
    const json::value& e = v->as_array()[i];
    const std::string where = "engine.lora[" + std::to_string(i) + "].";
    if (!e.is_object()) return Status::invalid_argument("engine.lora must be a list of {url, sha256, scale} tables");
    SpecFields f(e.as_object(), where);
    LoraRef ref;
    CS_RETURN_IF_ERROR(f.string("url", &ref.url, true));
    if (!valid_model_url(ref.url) || ref.url.find(' ') != std::string::npos) {
      return Status::invalid_argument(where + "url must start with https://, http:// or hf:// and hold no space");
    }
    CS_RETURN_IF_ERROR(f.string("sha256", &ref.sha256, true));
    if (!valid_sha256(ref.sha256)) return Status::invalid_argument(where + "sha256 must be 64 lower-case hex digits");
    CS_RETURN_IF_ERROR(f.number("scale", -100, 100, &ref.scale));
    CS_RETURN_IF_ERROR(f.no_unknown_keys());
    out.push_back(encode_lora_ref(ref));
  }
  return out;
}

// verify_fraction and verify_agreement (spot checks, docs/fleet.md "Spot checks and canaries").
Status read_spot_check_fields(SpecFields& top, GatewaySettings& g) {
  CS_RETURN_IF_ERROR(top.number("verify_fraction", 0, 1, &g.verify_fraction));
  CS_RETURN_IF_ERROR(top.string("verify_agreement", &g.verify_agreement));
  if (g.verify_agreement != "text" && g.verify_agreement != "first_line") {
    return Status::invalid_argument(
        "verify_agreement must be \"text\" (the whole answer) or \"first_line\" (a "
        "verdict model's first line), not \"" +
        g.verify_agreement.substr(0, 32) + "\"");
  }
  return {};
}

// The stored document's fields, in one list for the writer and the reader (spec_fields() below):
// a field added to DeploymentSpec is added here once. `S` is the struct, const for the writer.
template <class S, class V>
void engine_fields(S& e, V& v) {
  v.field("ctx_size", e.ctx_size);
  v.field("parallel", e.parallel);
  v.field("threads", e.threads);
  v.field("lora", e.lora);
  v.field("simulated", e.simulated);
  v.field("chat_template", e.chat_template);
  v.field("chat_template_jinja", e.chat_template_jinja);
  v.field("kv_type", e.kv_type);
  v.field("batch_size", e.batch_size);
  v.field("prefill_chunk", e.prefill_chunk);
  v.field("embeddings", e.embeddings);
  v.field("pooling", e.pooling);
  v.field("mlock", e.mlock);
  v.field("special_in_content", e.special_in_content);
  v.section("workload", [&] {
    v.field("prompt_tokens", e.workload.prompt_tokens);
    v.field("max_tokens", e.workload.max_tokens);
    v.field("concurrency", e.workload.concurrency);
    v.field("objective", e.workload.objective);
    v.field("autotune_seconds", e.workload.autotune_seconds);
  });
}

template <class S, class V>
void serving_fields(S& s, V& v) {
  v.field("model_url", s.model_url);
  v.field("model_sha256", s.model_sha256);
  v.section("engine", [&] { engine_fields(s.engine, v); });
}

template <class S, class V>
void spec_fields(S& s, V& v) {
  v.field("name", s.name);
  v.field("model_url", s.model_url);
  v.field("model_sha256", s.model_sha256);
  v.field("replicas", s.replicas);
  v.field("spares", s.spares);
  v.field("max_price_per_day", s.max_price_per_day);
  v.section("requirements", [&] {
    auto& q = s.requirements;
    v.field("min_ram_bytes", q.min_ram_bytes);
    v.field("min_cores", q.min_cores);
    v.field("arch", q.arch);
    v.field("min_decode_tps", q.min_decode_tps);
    v.field("attested_only", q.attested_only);
    v.field("allow", q.allow);
    v.field("charging_only", q.charging_only);
    v.field("min_battery", q.min_battery);
    v.field("max_temperature_c", q.max_temperature_c);
  });
  v.section("engine", [&] { engine_fields(s.engine, v); });
  v.section("gateway", [&] {
    auto& g = s.gateway;
    v.field("alias", g.alias);
    v.field("queue_max", g.queue_max);
    v.field("queue_timeout_ms", g.queue_timeout_ms);
    v.field("hedge_max_tokens", g.hedge_max_tokens);
    v.field("hedge_delay_ms", g.hedge_delay_ms);
    v.field("batch_reserve_slots", g.batch_reserve_slots);
    v.field("first_byte_timeout_ms", g.first_byte_timeout_ms);
    v.field("verify_fraction", g.verify_fraction);
    v.field("verify_agreement", g.verify_agreement);
  });
  v.section("autoscale", [&] {
    auto& a = s.autoscale;
    v.field("min_replicas", a.min_replicas);
    v.field("max_replicas", a.max_replicas);
    v.field("max_total_price_per_day", a.max_total_price_per_day);
    v.field("target_wait_s", a.target_wait_s);
    v.field("batch_deadline_s", a.batch_deadline_s);
    v.field("cooldown_s", a.cooldown_s);
    v.field("schedules", a.schedules);
  });
  v.field("env", s.env);
}

// Writes each field under its name.
class DocumentWriter {
 public:
  template <class T>
  void field(std::string_view key, const T& value) {
    (*current_)[key] = json::value_from(value);
  }
  // A double as the shortest text that reads back to it: Boost.JSON's own number parsing may
  // land one unit in the last place away (1.81 does for about one double in ten).
  void field(std::string_view key, double value) {
    char text[64];  // the longest double takes 24
    const auto [end, ec] = std::to_chars(text, text + sizeof(text), value);
    (*current_)[key] = std::string(text, ec == std::errc() ? end : text);
  }
  void field(std::string_view key, const std::vector<ScheduleWindow>& windows) {
    json::array a;
    for (const ScheduleWindow& w : windows) {
      a.push_back(json::object{{"cron", w.cron}, {"replicas", w.replicas}, {"for_s", w.for_s}});
    }
    (*current_)[key] = std::move(a);
  }
  template <class F>
  void section(std::string_view key, F&& fields) {
    json::object sub;
    json::object* outer = std::exchange(current_, &sub);
    fields();
    current_ = outer;
    (*current_)[key] = std::move(sub);
  }
  std::string text() const { return json::serialize(top_); }
  json::object take() { return std::move(top_); }

 private:
  json::object top_;
  json::object* current_ = &top_;
};

// Reads each field from its name (absent: the field keeps its default); the first wrong type or
// unknown key is the status, DataLoss naming the key.
class DocumentReader {
 public:
  DocumentReader(const json::object& top, std::string what) : current_(&top), what_(std::move(what)) {}

  template <class T>
  void field(std::string_view key, T& out) {
    if (!status_.ok()) return;
    seen_.insert(prefix_ + std::string(key));
    const auto it = current_->find(key);
    if (it == current_->end()) return;
    if (!read(it->value(), &out)) fail(std::string(key) + " has the wrong type or range");
  }

  template <class F>
  void section(std::string_view key, F&& fields) {
    if (!status_.ok()) return;
    seen_.insert(prefix_ + std::string(key));
    const auto it = current_->find(key);
    if (it == current_->end()) return;
    if (!it->value().is_object()) return fail(std::string(key) + " is not an object");
    const json::object* outer = std::exchange(current_, &it->value().as_object());
    const std::string outer_prefix = std::exchange(prefix_, prefix_ + std::string(key) + ".");
    fields();
    check_known();
    current_ = outer;
    prefix_ = outer_prefix;
  }

  // The status after the last section; call once the top-level fields are read.
  Status finish() {
    check_known();
    return status_;
  }

 private:
  void fail(const std::string& why) {
    if (status_.ok()) status_ = Status::data_loss(what_ + ": " + prefix_ + why);
  }
  void check_known() {
    for (const auto& kv : *current_) {
      if (!seen_.contains(prefix_ + std::string(kv.key()))) return fail(std::string(kv.key()) + " is not a known key");
    }
  }

  static bool read(const json::value& v, std::string* out) {
    if (!v.is_string()) return false;
    *out = std::string(v.as_string());
    return true;
  }
  static bool read(const json::value& v, bool* out) {
    if (!v.is_bool()) return false;
    *out = v.as_bool();
    return true;
  }
  static bool read(const json::value& v, int* out) {
    const auto n = v.if_int64();
    if (n == nullptr || *n < std::numeric_limits<int>::min() || *n > std::numeric_limits<int>::max()) return false;
    *out = static_cast<int>(*n);
    return true;
  }
  static bool read(const json::value& v, int64_t* out) {
    if (!v.is_int64()) return false;
    *out = v.as_int64();
    return true;
  }
  static bool read(const json::value& v, std::vector<ScheduleWindow>* out) {
    if (!v.is_array()) return false;
    out->clear();
    for (const json::value& e : v.as_array()) {
      const json::object* o = e.if_object();
      if (o == nullptr || o->size() != 3) return false;
      ScheduleWindow w;
      const json::value* cron = o->if_contains("cron");
      const json::value* replicas = o->if_contains("replicas");
      const json::value* for_s = o->if_contains("for_s");
      if (cron == nullptr || !read(*cron, &w.cron) || replicas == nullptr || !read(*replicas, &w.replicas) ||
          for_s == nullptr || !read(*for_s, &w.for_s)) {
        return false;
      }
      out->push_back(std::move(w));
    }
    return true;
  }
  static bool read(const json::value& v, uint64_t* out) {
    if (v.is_uint64()) {
      *out = v.as_uint64();
      return true;
    }
    if (!v.is_int64() || v.as_int64() < 0) return false;
    *out = static_cast<uint64_t>(v.as_int64());
    return true;
  }
  static bool read(const json::value& v, double* out) {
    if (!v.is_string()) return false;
    const json::string& text = v.as_string();
    double d = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), d);
    if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(d)) return false;
    *out = d;
    return true;
  }
  static bool read(const json::value& v, std::vector<std::string>* out) {
    if (!v.is_array()) return false;
    out->clear();
    for (const json::value& e : v.as_array()) {
      if (!e.is_string()) return false;
      out->emplace_back(e.as_string());
    }
    return true;
  }
  static bool read(const json::value& v, std::vector<std::pair<std::string, std::string>>* out) {
    if (!v.is_array()) return false;
    out->clear();
    for (const json::value& e : v.as_array()) {
      if (!e.is_array() || e.as_array().size() != 2 || !e.as_array()[0].is_string() || !e.as_array()[1].is_string()) {
        return false;
      }
      out->emplace_back(std::string(e.as_array()[0].as_string()), std::string(e.as_array()[1].as_string()));
    }
    return true;
  }

  const json::object* current_;
  std::string what_;
  std::string prefix_;  // "engine." inside a section
  std::set<std::string> seen_;
  Status status_;
};

Result<json::object> parse_document(std::string_view text, const std::string& what) {
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec || !v.is_object()) return Status::data_loss(what + " is not a JSON object");
  return std::move(v.as_object());
}

}  // namespace

Status check_env_entry(std::string_view name, std::string_view value) {
  if (name.size() > 128 || !valid_env_name(name)) {
    return Status::invalid_argument("env." + std::string(name.substr(0, 128)) +
                                    ": not a valid variable name ([A-Za-z_][A-Za-z0-9_]*, at most 128 characters)");
  }
  if (value.size() > kMaxEnvValueBytes) {
    return Status::invalid_argument("env." + std::string(name) + ": the value is longer than " +
                                    std::to_string(kMaxEnvValueBytes) + " bytes");
  }
  return {};
}

std::string encode_lora_ref(const LoraRef& ref) {
  std::ostringstream s;
  s.precision(17);
  s << ref.sha256 << ' ' << ref.scale << ' ' << ref.url;
  return s.str();
}

Result<LoraRef> decode_lora_ref(std::string_view text) {
  const size_t a = text.find(' ');
  const size_t b = a == std::string_view::npos ? a : text.find(' ', a + 1);
  if (b == std::string_view::npos) return Status::invalid_argument("not a LoRA reference: " + std::string(text));
  LoraRef ref;
  ref.sha256 = std::string(text.substr(0, a));
  ref.url = std::string(text.substr(b + 1));
  const std::string scale(text.substr(a + 1, b - a - 1));
  char* end = nullptr;
  ref.scale = std::strtod(scale.c_str(), &end);
  if (!valid_sha256(ref.sha256) || end == scale.c_str() || *end != '\0' || !std::isfinite(ref.scale) ||
      !valid_model_url(ref.url)) {
    return Status::invalid_argument("not a LoRA reference: " + std::string(text));
  }
  return ref;
}

Result<uint64_t> parse_size(std::string_view text) {
  const std::string s(text);
  size_t pos = 0;
  double value = 0;
  try {
    value = std::stod(s, &pos);
  } catch (...) {
    return Status::invalid_argument("\"" + s + "\" is not a size such as 12G or 512M");
  }
  std::string unit = s.substr(pos);
  for (char& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (unit.ends_with("IB")) unit.resize(unit.size() - 2);
  if (unit.ends_with("B") && unit.size() == 2) unit.resize(1);
  double scale = 1;
  if (unit.empty() || unit == "B") {
    scale = 1;
  } else if (unit == "K") {
    scale = 1024.0;
  } else if (unit == "M") {
    scale = 1024.0 * 1024;
  } else if (unit == "G") {
    scale = 1024.0 * 1024 * 1024;
  } else if (unit == "T") {
    scale = 1024.0 * 1024 * 1024 * 1024;
  } else {
    return Status::invalid_argument("\"" + s + "\" is not a size such as 12G or 512M");
  }
  const double bytes = value * scale;
  if (!std::isfinite(bytes) || bytes < 0 || bytes > 1e18) {
    return Status::invalid_argument("\"" + s + "\" is not a size such as 12G or 512M");
  }
  // A whole number of units is read exactly: through a double, sizes above 2^53 bytes would
  // change on every round trip through format_size (found by the deployment_spec fuzzer).
  const std::string_view digits = std::string_view(s).substr(0, pos);
  if (!digits.empty() && digits.find_first_not_of("0123456789") == std::string_view::npos) {
    uint64_t whole = 0;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), whole);
    const auto unit_bytes = static_cast<uint64_t>(scale);
    if (ec != std::errc() || end != digits.data() + digits.size() ||
        whole > 1'000'000'000'000'000'000ULL / unit_bytes) {
      return Status::invalid_argument("\"" + s + "\" is not a size such as 12G or 512M");
    }
    return whole * unit_bytes;
  }
  return static_cast<uint64_t>(std::llround(bytes));
}

Result<json::value> toml_to_json(std::string_view text, const std::string& source) {
  // Debian's toml++ is built with exceptions: a syntax error is thrown, never crosses our API.
  try {
    const toml::table table = toml::parse(text, source);
    return node_to_json(table, "");
  } catch (const toml::parse_error& e) {
    return Status::invalid_argument(source + ":" + std::to_string(e.source().begin.line) + ":" +
                                    std::to_string(e.source().begin.column) + ": " + std::string(e.description()));
  }
}

namespace {

// The top-level keys other than the tables: the deployment's name, size, price and gateway.
Status read_top_fields(SpecFields& top, DeploymentSpec& spec) {
  CS_RETURN_IF_ERROR(top.string("name", &spec.name, true));
  if (!valid_deployment_name(spec.name)) {
    return Status::invalid_argument("name \"" + spec.name +
                                    "\" must be 1-40 characters of a-z, 0-9 and '-', not starting or ending with '-'");
  }
  CS_RETURN_IF_ERROR(top.integer("replicas", 1, kMaxReplicas, &spec.replicas));
  CS_RETURN_IF_ERROR(top.integer("spares", 0, kMaxSpares, &spec.spares));
  spec.max_price_per_day = -1;
  CS_RETURN_IF_ERROR(top.number("max_price_per_day", 0, 1e9, &spec.max_price_per_day));
  if (spec.max_price_per_day < 0) return Status::invalid_argument("max_price_per_day is required");
  CS_RETURN_IF_ERROR(top.string("alias", &spec.gateway.alias));
  if (!spec.gateway.alias.empty() && !valid_model_alias(spec.gateway.alias)) {
    return Status::invalid_argument("alias \"" + spec.gateway.alias +
                                    "\" must be 1-128 printable characters without spaces or quotes");
  }
  CS_RETURN_IF_ERROR(top.integer("queue_max", 0, 100000, &spec.gateway.queue_max));
  double queue_timeout_s = spec.gateway.queue_timeout_ms / 1000.0;
  CS_RETURN_IF_ERROR(top.number("queue_timeout", 0.1, 86400, &queue_timeout_s));
  spec.gateway.queue_timeout_ms = static_cast<int>(std::lround(queue_timeout_s * 1000));
  CS_RETURN_IF_ERROR(top.integer("hedge_max_tokens", 0, 4096, &spec.gateway.hedge_max_tokens));
  double hedge_delay_s = 0;
  CS_RETURN_IF_ERROR(top.number("hedge_delay", 0, 60, &hedge_delay_s));
  spec.gateway.hedge_delay_ms = static_cast<int>(std::lround(hedge_delay_s * 1000));
  CS_RETURN_IF_ERROR(top.integer("batch_reserve_slots", 0, 100000, &spec.gateway.batch_reserve_slots));
  double first_byte_timeout_s = 0;
  CS_RETURN_IF_ERROR(top.number("first_byte_timeout", 0, 86400, &first_byte_timeout_s));
  spec.gateway.first_byte_timeout_ms = static_cast<int>(std::lround(first_byte_timeout_s * 1000));
  return read_spot_check_fields(top, spec.gateway);
}

Status read_model_table(SpecFields& top, DeploymentSpec& spec) {
  CS_ASSIGN_OR_RETURN(const json::object* model, top.table("model"));
  if (model == nullptr) return Status::invalid_argument("[model] is required (url and sha256)");
  SpecFields m(*model, "model.");
  CS_RETURN_IF_ERROR(m.string("url", &spec.model_url, true));
  if (!valid_model_url(spec.model_url)) {
    return Status::invalid_argument("model.url must start with https://, http:// or hf://");
  }
  CS_RETURN_IF_ERROR(m.string("sha256", &spec.model_sha256, true));
  if (!valid_sha256(spec.model_sha256)) {
    return Status::invalid_argument("model.sha256 must be 64 lower-case hex digits (sha256sum of the file)");
  }
  return m.no_unknown_keys();
}

Status read_requirements_table(SpecFields& top, Requirements& q) {
  CS_ASSIGN_OR_RETURN(const json::object* req, top.table("requirements"));
  if (req == nullptr) return {};
  SpecFields r(*req, "requirements.");
  CS_RETURN_IF_ERROR(read_size(r, "min_ram", &q.min_ram_bytes));
  CS_RETURN_IF_ERROR(r.integer("min_cores", 0, 1024, &q.min_cores));
  CS_RETURN_IF_ERROR(r.string("arch", &q.arch));
  if (!q.arch.empty() && q.arch != "x86_64" && q.arch != "aarch64") {
    return Status::invalid_argument("requirements.arch must be \"x86_64\" or \"aarch64\"");
  }
  CS_RETURN_IF_ERROR(r.number("min_decode_tps", 0, 1e6, &q.min_decode_tps));
  CS_RETURN_IF_ERROR(r.boolean("attested_only", &q.attested_only));
  CS_RETURN_IF_ERROR(r.strings("allow", &q.allow));
  CS_RETURN_IF_ERROR(r.boolean("charging_only", &q.charging_only));
  CS_RETURN_IF_ERROR(r.integer("min_battery", 0, 100, &q.min_battery));
  CS_RETURN_IF_ERROR(r.number("max_temperature_c", 0, 150, &q.max_temperature_c));
  return r.no_unknown_keys();
}

// The [engine] keys that are `cellserve serve`'s own settings, each checked as serve checks its
// flag, so that a spec no device could load is refused at deploy time, naming the key.
Status read_serve_settings(SpecFields& e, EngineSettings& engine) {
  CS_RETURN_IF_ERROR(e.string("chat_template", &engine.chat_template));
  if (!engine.chat_template.empty() && !engine::chat::builtin_chat_template(engine.chat_template)) {
    return Status::invalid_argument(
        "engine.chat_template: '" + engine.chat_template +
        "' is not a built-in template (built in: " + engine::chat::builtin_chat_template_list() + ")");
  }
  CS_RETURN_IF_ERROR(e.string("chat_template_jinja", &engine.chat_template_jinja));
  if (!engine.chat_template_jinja.empty()) {
    if (!engine.chat_template.empty()) {
      return Status::invalid_argument("engine.chat_template and engine.chat_template_jinja cannot both be set");
    }
    if (engine.chat_template_jinja.size() > kMaxInlineChatTemplateBytes) {
      return Status::invalid_argument("engine.chat_template_jinja: at most " +
                                      std::to_string(kMaxInlineChatTemplateBytes) + " bytes");
    }
    if (auto parsed = engine::chat::ChatTemplate::parse(engine.chat_template_jinja); !parsed.ok()) {
      return Status::invalid_argument("engine.chat_template_jinja: " + parsed.status().message());
    }
  }
  CS_RETURN_IF_ERROR(e.string("kv_type", &engine.kv_type));
  if (!engine.kv_type.empty() && engine.kv_type != "f16" && engine.kv_type != "f32" && engine.kv_type != "q8_0") {
    return Status::invalid_argument("engine.kv_type must be f16, f32 or q8_0, not '" + engine.kv_type + "'");
  }
  CS_RETURN_IF_ERROR(e.integer("batch_size", 0, 1 << 16, &engine.batch_size));
  CS_RETURN_IF_ERROR(e.integer("prefill_chunk", 0, 1 << 16, &engine.prefill_chunk));
  CS_RETURN_IF_ERROR(e.boolean("embeddings", &engine.embeddings));
  CS_RETURN_IF_ERROR(e.string("pooling", &engine.pooling));
  if (!engine.pooling.empty() && engine.pooling != "none" && engine.pooling != "mean" && engine.pooling != "cls" &&
      engine.pooling != "last") {
    return Status::invalid_argument("engine.pooling must be none, mean, cls or last, not '" + engine.pooling + "'");
  }
  if (!engine.pooling.empty() && !engine.embeddings) {
    return Status::invalid_argument("engine.pooling needs engine.embeddings = true");
  }
  CS_RETURN_IF_ERROR(e.boolean("mlock", &engine.mlock));
  CS_RETURN_IF_ERROR(e.boolean("special_in_content", &engine.special_in_content));
  return {};
}

Status read_engine_table(SpecFields& top, DeploymentSpec& spec) {
  CS_ASSIGN_OR_RETURN(const json::object* engine, top.table("engine"));
  if (engine == nullptr) return {};
  SpecFields e(*engine, "engine.");
  CS_RETURN_IF_ERROR(e.integer("ctx_size", 0, 1 << 20, &spec.engine.ctx_size));
  CS_RETURN_IF_ERROR(e.integer("parallel", 0, 32, &spec.engine.parallel));
  CS_RETURN_IF_ERROR(e.integer("threads", 0, 256, &spec.engine.threads));
  CS_ASSIGN_OR_RETURN(spec.engine.lora, read_lora_list(e));
  CS_RETURN_IF_ERROR(e.boolean("simulated", &spec.engine.simulated));
  CS_RETURN_IF_ERROR(read_serve_settings(e, spec.engine));
  CS_RETURN_IF_ERROR(e.no_unknown_keys());
  if (spec.engine.simulated && !spec.engine.lora.empty()) {
    return Status::invalid_argument(
        "engine.simulated cannot be combined with engine.lora (a simulator loads no adapters)");
  }
  return {};
}

Status read_workload_table(SpecFields& top, DeploymentSpec& spec) {
  CS_ASSIGN_OR_RETURN(const json::object* table, top.table("workload"));
  if (table == nullptr) return {};
  SpecFields w(*table, "workload.");
  Workload& wl = spec.engine.workload;
  CS_RETURN_IF_ERROR(w.integer("prompt_tokens", 1, 1 << 20, &wl.prompt_tokens));
  if (wl.prompt_tokens == 0) return Status::invalid_argument("workload.prompt_tokens is required");
  CS_RETURN_IF_ERROR(w.integer("max_tokens", 1, 1 << 20, &wl.max_tokens));
  CS_RETURN_IF_ERROR(w.integer("concurrency", 1, 256, &wl.concurrency));
  CS_RETURN_IF_ERROR(w.string("objective", &wl.objective));
  if (wl.objective != "throughput" && wl.objective != "latency") {
    return Status::invalid_argument("workload.objective must be throughput or latency, not '" + wl.objective + "'");
  }
  CS_RETURN_IF_ERROR(w.integer("autotune_seconds", 1, 3600, &wl.autotune_seconds));
  return w.no_unknown_keys();
}

Status read_env_table(SpecFields& top, DeploymentSpec& spec) {
  CS_ASSIGN_OR_RETURN(const json::object* env, top.table("env"));
  if (env == nullptr) return {};
  for (const auto& kv : *env) {
    const std::string key(kv.key());
    if (!kv.value().is_string()) {
      return Status::invalid_argument("env." + (valid_env_name(key) ? key : "<name>") + " must be a string");
    }
    CS_RETURN_IF_ERROR(check_env_entry(key, kv.value().as_string()));
    if (spec.env.size() == kMaxEnvVars) {
      return Status::invalid_argument("env: at most " + std::to_string(kMaxEnvVars) + " variables");
    }
    spec.env.emplace_back(key, std::string(kv.value().as_string()));
  }
  return {};
}

}  // namespace

Result<DeploymentSpec> parse_deployment_spec(const json::value& value) {
  if (!value.is_object()) return Status::invalid_argument("a deployment spec must be an object (a TOML document)");
  DeploymentSpec spec;
  SpecFields top(value.as_object(), "");
  CS_RETURN_IF_ERROR(read_top_fields(top, spec));
  CS_RETURN_IF_ERROR(read_autoscale_fields(top, spec, value.as_object().contains("replicas")));
  CS_RETURN_IF_ERROR(read_model_table(top, spec));
  CS_RETURN_IF_ERROR(read_requirements_table(top, spec.requirements));
  CS_RETURN_IF_ERROR(read_engine_table(top, spec));
  CS_RETURN_IF_ERROR(read_workload_table(top, spec));
  CS_RETURN_IF_ERROR(read_env_table(top, spec));
  CS_RETURN_IF_ERROR(top.no_unknown_keys());
  return spec;
}

json::object deployment_spec_json(const DeploymentSpec& spec, bool with_secrets) {
  json::object o;
  o["name"] = spec.name;
  o["replicas"] = spec.replicas;
  o["spares"] = spec.spares;
  o["max_price_per_day"] = spec.max_price_per_day;
  add_autoscale_json(spec.autoscale, o);
  if (!spec.gateway.alias.empty()) o["alias"] = spec.gateway.alias;
  o["queue_max"] = spec.gateway.queue_max;
  o["queue_timeout"] = spec.gateway.queue_timeout_ms / 1000.0;
  if (spec.gateway.hedge_max_tokens > 0) o["hedge_max_tokens"] = spec.gateway.hedge_max_tokens;
  if (spec.gateway.hedge_delay_ms > 0) o["hedge_delay"] = spec.gateway.hedge_delay_ms / 1000.0;
  o["batch_reserve_slots"] = spec.gateway.batch_reserve_slots;
  if (spec.gateway.first_byte_timeout_ms > 0) o["first_byte_timeout"] = spec.gateway.first_byte_timeout_ms / 1000.0;
  if (spec.gateway.verify_fraction > 0) o["verify_fraction"] = spec.gateway.verify_fraction;
  if (spec.gateway.verify_agreement != "text") o["verify_agreement"] = spec.gateway.verify_agreement;
  o["model"] = json::object{{"url", spec.model_url}, {"sha256", spec.model_sha256}};
  const Requirements& q = spec.requirements;
  json::object req;
  if (q.min_ram_bytes > 0) req["min_ram"] = format_size(q.min_ram_bytes);
  if (q.min_cores > 0) req["min_cores"] = q.min_cores;
  if (!q.arch.empty()) req["arch"] = q.arch;
  if (q.min_decode_tps > 0) req["min_decode_tps"] = q.min_decode_tps;
  if (q.attested_only) req["attested_only"] = true;
  if (!q.allow.empty()) req["allow"] = json::value_from(q.allow);
  if (q.charging_only) req["charging_only"] = true;
  if (q.min_battery > 0) req["min_battery"] = q.min_battery;
  if (q.max_temperature_c > 0) req["max_temperature_c"] = q.max_temperature_c;
  o["requirements"] = std::move(req);
  json::object engine;
  if (spec.engine.ctx_size > 0) engine["ctx_size"] = spec.engine.ctx_size;
  if (spec.engine.parallel > 0) engine["parallel"] = spec.engine.parallel;
  if (spec.engine.threads > 0) engine["threads"] = spec.engine.threads;
  if (!spec.engine.lora.empty()) {
    json::array lora;
    for (const std::string& text : spec.engine.lora) {
      if (auto ref = decode_lora_ref(text); ref.ok()) {
        lora.push_back(json::object{{"url", ref->url}, {"sha256", ref->sha256}, {"scale", ref->scale}});
      }
    }
    engine["lora"] = std::move(lora);
  }
  if (spec.engine.simulated) engine["simulated"] = true;
  const EngineSettings& se = spec.engine;
  if (!se.chat_template.empty()) engine["chat_template"] = se.chat_template;
  if (!se.chat_template_jinja.empty()) engine["chat_template_jinja"] = se.chat_template_jinja;
  if (!se.kv_type.empty()) engine["kv_type"] = se.kv_type;
  if (se.batch_size > 0) engine["batch_size"] = se.batch_size;
  if (se.prefill_chunk > 0) engine["prefill_chunk"] = se.prefill_chunk;
  if (se.embeddings) engine["embeddings"] = true;
  if (!se.pooling.empty()) engine["pooling"] = se.pooling;
  if (se.mlock) engine["mlock"] = true;
  if (se.special_in_content) engine["special_in_content"] = true;
  o["engine"] = std::move(engine);
  if (const Workload& wl = spec.engine.workload; wl.prompt_tokens > 0) {
    o["workload"] = json::object{{"prompt_tokens", wl.prompt_tokens},
                                 {"max_tokens", wl.max_tokens},
                                 {"concurrency", wl.concurrency},
                                 {"objective", wl.objective},
                                 {"autotune_seconds", wl.autotune_seconds}};
  }
  json::object env;
  for (const auto& [k, v] : spec.env) env[k] = with_secrets ? v : std::string("***");
  o["env"] = std::move(env);
  return o;
}

std::string deployment_spec_document(const DeploymentSpec& spec) {
  DocumentWriter w;
  spec_fields(spec, w);
  return w.text();
}

// A stored document read back through its field list (`fields(value, reader)`).
template <typename T, typename Fields>
Result<T> read_document(std::string_view text, const std::string& what, Fields fields) {
  CS_ASSIGN_OR_RETURN(const json::object doc, parse_document(text, what));
  T value;
  DocumentReader r(doc, what);
  fields(value, r);
  CS_RETURN_IF_ERROR(r.finish());
  return value;
}

Result<DeploymentSpec> read_deployment_spec_document(std::string_view text) {
  return read_document<DeploymentSpec>(text, "stored deployment spec",
                                       [](DeploymentSpec& spec, DocumentReader& r) { spec_fields(spec, r); });
}

std::string serving_document(const Serving& serving) {
  DocumentWriter w;
  serving_fields(serving, w);
  return w.text();
}

json::object engine_settings_json(const EngineSettings& engine) {
  DocumentWriter w;
  engine_fields(engine, w);
  return w.take();
}

Result<Serving> read_serving_document(std::string_view text) {
  return read_document<Serving>(text, "stored replica serving",
                                [](Serving& serving, DocumentReader& r) { serving_fields(serving, r); });
}

}  // namespace cellserve::fleet
