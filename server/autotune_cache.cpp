#include "server/autotune_cache.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <boost/json.hpp>

#include "engine/quant/ggml_type.h"

namespace cellserve::server {
namespace {

namespace json = boost::json;

constexpr size_t kMaxAutotuneCacheBytes = 1 << 20;

std::optional<int64_t> cached_int(const json::object& o, std::string_view key, int64_t lo, int64_t hi) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr || !v->is_int64() || v->as_int64() < lo || v->as_int64() > hi) return std::nullopt;
  return v->as_int64();
}

double cached_rate(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v != nullptr && v->is_number() ? std::max(0.0, v->to_number<double>()) : 0.0;
}

}  // namespace

std::optional<AutotuneResult> read_autotune_cache(const std::string& path, const std::string& key) {
  if (path.empty()) return std::nullopt;
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec || size > kMaxAutotuneCacheBytes) return std::nullopt;
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  boost::system::error_code parse_error;
  const json::value v = json::parse(text.str(), parse_error);
  if (parse_error || !v.is_object()) return std::nullopt;
  const json::object& o = v.as_object();
  const json::value* kept_key = o.if_contains("key");
  if (kept_key == nullptr || !kept_key->is_string() || kept_key->as_string() != key) return std::nullopt;
  const auto threads = cached_int(o, "threads", 1, 4096);
  const auto chunk = cached_int(o, "prefill_chunk", 1, 1 << 20);
  const auto parallel = cached_int(o, "parallel", 0, 256);
  const json::value* kv = o.if_contains("kv_type");
  const std::optional<engine::GgmlType> kv_type =
      kv != nullptr && kv->is_string() ? engine::ggml_type_from_name(kv->as_string()) : std::nullopt;
  if (!threads || !chunk || !parallel || !kv_type) return std::nullopt;
  AutotuneResult r;
  r.threads = static_cast<int>(*threads);
  r.prefill_chunk = *chunk;
  r.parallel = static_cast<int>(*parallel);
  r.kv_type = *kv_type;
  r.prompt_tok_s = cached_rate(o, "prompt_tok_s");
  r.decode_tok_s = cached_rate(o, "generation_tok_s");
  r.workload_seconds = cached_rate(o, "workload_seconds");
  if (const json::value* report = o.if_contains("report"); report != nullptr && report->is_object()) {
    r.report = report->as_object();
  }
  return r;
}

Status write_autotune_cache(const std::string& path, const std::string& key, const AutotuneResult& r) {
  if (path.empty()) return {};
  const json::object o{{"key", key},
                       {"threads", r.threads},
                       {"prefill_chunk", r.prefill_chunk},
                       {"parallel", r.parallel},
                       {"kv_type", std::string(engine::ggml_type_name(r.kv_type))},
                       {"prompt_tok_s", r.prompt_tok_s},
                       {"generation_tok_s", r.decode_tok_s},
                       {"workload_seconds", r.workload_seconds},
                       {"report", r.report}};
  const std::string partial = path + ".partial";
  {
    std::ofstream out(partial, std::ios::binary | std::ios::trunc);
    out << json::serialize(o);
    out.close();
    if (!out) return Status::internal("cannot write " + partial);
  }
  std::error_code ec;
  std::filesystem::rename(partial, path, ec);
  if (ec) return Status::internal("cannot rename " + partial + ": " + ec.message());
  return {};
}

}  // namespace cellserve::server
