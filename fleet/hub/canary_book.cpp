#include "fleet/hub/canary_book.h"

#include <boost/json.hpp>

#include "fleet/hub/gateway_request.h"
#include "fleet/hub/spot_check_answer.h"

namespace cellserve::fleet {
namespace {

namespace json = boost::json;

Result<Canary> parse_canary(std::string_view line, size_t number) {
  const std::string where = "canaries line " + std::to_string(number) + ": ";
  if (line.size() > kMaxCanaryLineBytes) {
    return Status::invalid_argument(where + "longer than " + std::to_string(kMaxCanaryLineBytes) + " bytes");
  }
  boost::system::error_code ec;
  const json::value v = json::parse(line, ec);
  if (ec || !v.is_object()) return Status::invalid_argument(where + "not a JSON object");
  const json::object& o = v.as_object();
  for (const auto& kv : o) {
    if (kv.key() != "request" && kv.key() != "expect") {
      return Status::invalid_argument(where + "unknown key '" + std::string(kv.key()).substr(0, 32) +
                                      "' (request, expect)");
    }
  }
  const json::value* request = o.if_contains("request");
  const json::value* expect = o.if_contains("expect");
  if (request == nullptr || !request->is_object()) return Status::invalid_argument(where + "request must be an object");
  if (expect == nullptr || !expect->is_string() || expect->as_string().size() > kMaxCanaryExpectBytes) {
    return Status::invalid_argument(where + "expect must be a string of at most " +
                                    std::to_string(kMaxCanaryExpectBytes) + " bytes");
  }
  const json::object& body = request->as_object();
  Canary c;
  c.path = body.contains("messages") ? "/chat/completions" : body.contains("prompt") ? "/completions" : "";
  if (c.path.empty()) return Status::invalid_argument(where + "request needs messages (chat) or prompt (completions)");
  if (const json::value* s = body.if_contains("stream"); s != nullptr && !(s->is_bool() && !s->as_bool())) {
    return Status::invalid_argument(where + "request must not stream");
  }
  if (!spot_checkable(body)) {
    return Status::invalid_argument(where + "request must be greedy (\"temperature\": 0) or set a seed, and n = 1");
  }
  if (auto g = read_gateway_request(body, c.path); !g.ok())
    return Status::invalid_argument(where + g.status().message());
  c.body = json::serialize(body);
  c.expect = std::string(expect->as_string());
  return c;
}

}  // namespace

Result<std::vector<Canary>> parse_canaries(std::string_view jsonl) {
  std::vector<Canary> out;
  size_t number = 0;
  size_t pos = 0;
  while (pos < jsonl.size()) {
    size_t end = jsonl.find('\n', pos);
    if (end == std::string_view::npos) end = jsonl.size();
    const std::string_view line = jsonl.substr(pos, end - pos);
    pos = end + 1;
    ++number;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    if (out.size() == kMaxCanaries) {
      return Status::invalid_argument("canaries: at most " + std::to_string(kMaxCanaries) + " cases");
    }
    CS_ASSIGN_OR_RETURN(Canary c, parse_canary(line, number));
    out.push_back(std::move(c));
  }
  return out;
}

std::string CanaryBook::load(const std::vector<CanarySet>& sets) {
  std::string skipped;
  for (const CanarySet& s : sets) {
    if (!set(s).ok()) skipped += (skipped.empty() ? "" : ", ") + s.deployment;
  }
  return skipped;
}

Status CanaryBook::set(const CanarySet& set) {
  if (set.every < 1 || set.every > kMaxCanaryEvery) {
    return Status::invalid_argument("every must be in [1, " + std::to_string(kMaxCanaryEvery) + "]");
  }
  CS_ASSIGN_OR_RETURN(std::vector<Canary> cases, parse_canaries(set.cases));
  std::lock_guard lock(mu_);
  if (cases.empty()) {
    sets_.erase(set.deployment);
    return {};
  }
  Set& s = sets_[set.deployment];
  s.cases = std::move(cases);
  s.every = set.every;
  s.devices.clear();
  return {};
}

void CanaryBook::remove(const std::string& deployment) {
  std::lock_guard lock(mu_);
  sets_.erase(deployment);
}

std::pair<size_t, int> CanaryBook::summary(const std::string& deployment) const {
  std::lock_guard lock(mu_);
  const auto it = sets_.find(deployment);
  if (it == sets_.end()) return {0, 0};
  return {it->second.cases.size(), it->second.every};
}

std::optional<Canary> CanaryBook::count_request(const std::string& deployment, const std::string& device) {
  std::lock_guard lock(mu_);
  const auto it = sets_.find(deployment);
  if (it == sets_.end()) return std::nullopt;
  Set& s = it->second;
  Set::Turn& turn = s.devices[device];
  if (++turn.count < s.every) return std::nullopt;
  turn.count = 0;
  const size_t i = turn.next % s.cases.size();
  turn.next = i + 1;
  return s.cases[i];
}

}  // namespace cellserve::fleet
