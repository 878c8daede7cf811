#include "fleet/hub/replica_loads.h"

#include <boost/json.hpp>

#include "fleet/spec/replica_address.h"

namespace cellserve::fleet {
namespace {

namespace json = boost::json;

constexpr size_t kMaxProcessorIdBytes = 128;

std::optional<int64_t> bounded_int(const json::object& o, std::string_view key, int64_t lo, int64_t hi) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr || !v->is_int64()) return std::nullopt;
  const int64_t n = v->as_int64();
  if (n < lo || n > hi) return std::nullopt;
  return n;
}

}  // namespace

std::string replica_loads_json(const std::vector<ReplicaLoad>& loads, const std::vector<QueueLoad>& queues) {
  json::array entries;
  entries.reserve(loads.size());
  for (const ReplicaLoad& l : loads) {
    entries.push_back(json::object{{"deployment", l.deployment},
                                   {"index", l.index},
                                   {"processor", l.processor_id},
                                   {"slots", l.slots},
                                   {"busy", l.busy},
                                   {"prefill_done", l.prefill_done},
                                   {"prefill_total", l.prefill_total}});
  }
  json::object message{{"loads", std::move(entries)}};
  if (!queues.empty()) {
    json::array q;
    for (const QueueLoad& l : queues) {
      q.push_back(json::object{{"deployment", l.deployment}, {"waiting", l.waiting}, {"longest_ms", l.longest_ms}});
    }
    message["queues"] = std::move(q);
  }
  return json::serialize(message);
}

namespace {

Status bad_message(const std::string& why) { return Status::invalid_argument("hub load message: " + why); }

Result<json::object> parse_message(std::string_view body) {
  boost::system::error_code ec;
  json::value v = json::parse(body, ec);
  if (ec || !v.is_object()) return bad_message("not a JSON object");
  return std::move(v.as_object());
}

Result<std::vector<ReplicaLoad>> read_loads(const json::object& message) {
  const auto bad = bad_message;
  const json::value* loads = message.if_contains("loads");
  if (loads == nullptr || !loads->is_array()) return bad("\"loads\" is not an array");
  if (loads->as_array().size() > kMaxReplicaLoads)
    return bad("more than " + std::to_string(kMaxReplicaLoads) + " entries");
  std::vector<ReplicaLoad> out;
  out.reserve(loads->as_array().size());
  for (const json::value& e : loads->as_array()) {
    if (!e.is_object()) return bad("an entry is not an object");
    const json::object& o = e.as_object();
    const json::value* deployment = o.if_contains("deployment");
    const json::value* processor = o.if_contains("processor");
    const std::optional<int64_t> index = bounded_int(o, "index", 0, 9999);
    const std::optional<int64_t> slots = bounded_int(o, "slots", 1, kMaxLoadSlots);
    if (deployment == nullptr || !deployment->is_string() || !valid_deployment_name(deployment->as_string()) ||
        processor == nullptr || !processor->is_string() || processor->as_string().empty() ||
        processor->as_string().size() > kMaxProcessorIdBytes || !index || !slots) {
      return bad("an entry lacks a valid deployment, index, processor or slots");
    }
    const std::optional<int64_t> busy = bounded_int(o, "busy", 0, *slots);
    if (!busy) return bad("an entry's busy is not within 0..slots");
    const bool has_prefill = o.contains("prefill_total") || o.contains("prefill_done");
    const std::optional<int64_t> prefill_total =
        has_prefill ? bounded_int(o, "prefill_total", 0, kMaxLoadPrefillTokens) : std::optional<int64_t>(0);
    const std::optional<int64_t> prefill_done =
        has_prefill && prefill_total ? bounded_int(o, "prefill_done", 0, *prefill_total) : std::optional<int64_t>(0);
    if (!prefill_total || !prefill_done) return bad("an entry's prefill_done/prefill_total are not 0..done..total");
    out.push_back({std::string(deployment->as_string()), static_cast<int>(*index), std::string(processor->as_string()),
                   static_cast<int>(*slots), static_cast<int>(*busy), static_cast<int>(*prefill_done),
                   static_cast<int>(*prefill_total)});
  }
  return out;
}

Result<std::vector<QueueLoad>> read_queues(const json::object& message) {
  const auto bad = bad_message;
  const json::value* queues = message.if_contains("queues");
  if (queues == nullptr) return std::vector<QueueLoad>{};
  if (!queues->is_array()) return bad("\"queues\" is not an array");
  if (queues->as_array().size() > kMaxQueueLoads) return bad("more than " + std::to_string(kMaxQueueLoads) + " queues");
  std::vector<QueueLoad> out;
  for (const json::value& e : queues->as_array()) {
    const json::object* o = e.if_object();
    const json::value* deployment = o == nullptr ? nullptr : o->if_contains("deployment");
    const std::optional<int64_t> waiting =
        o == nullptr ? std::nullopt : bounded_int(*o, "waiting", 1, kMaxQueueWaiting);
    const std::optional<int64_t> longest =
        o == nullptr ? std::nullopt : bounded_int(*o, "longest_ms", 0, kMaxQueueWaitMs);
    if (deployment == nullptr || !deployment->is_string() || !valid_deployment_name(deployment->as_string()) ||
        !waiting || !longest) {
      return bad("a queue lacks a valid deployment, waiting (1.." + std::to_string(kMaxQueueWaiting) +
                 ") or longest_ms");
    }
    out.push_back({std::string(deployment->as_string()), static_cast<int>(*waiting), *longest});
  }
  return out;
}

}  // namespace

Result<std::vector<ReplicaLoad>> replica_loads_from_json(std::string_view body) {
  CS_ASSIGN_OR_RETURN(const json::object message, parse_message(body));
  return read_loads(message);
}

Result<std::vector<QueueLoad>> queue_loads_from_json(std::string_view body) {
  CS_ASSIGN_OR_RETURN(const json::object message, parse_message(body));
  return read_queues(message);
}

Result<HubLoadMessage> hub_load_from_json(std::string_view body) {
  CS_ASSIGN_OR_RETURN(const json::object message, parse_message(body));
  HubLoadMessage out;
  CS_ASSIGN_OR_RETURN(out.loads, read_loads(message));
  CS_ASSIGN_OR_RETURN(out.queues, read_queues(message));
  return out;
}

}  // namespace cellserve::fleet
