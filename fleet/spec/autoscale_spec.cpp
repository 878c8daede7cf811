#include "fleet/spec/autoscale_spec.h"

#include <charconv>
#include <cmath>

#include <boost/json.hpp>

#include "fleet/spec/cron_schedule.h"
#include "fleet/spec/deployment_spec.h"

namespace cellserve::fleet {
namespace {

namespace json = boost::json;

constexpr int64_t kMaxDurationS = 365LL * 86400;
constexpr int64_t kMinBatchDeadlineS = 60;
constexpr int64_t kMaxBatchDeadlineS = 30LL * 86400;
constexpr int64_t kMinScheduleWindowS = 60;

struct Unit {
  char name;
  int64_t seconds;
};
constexpr Unit kUnits[] = {{'d', 86400}, {'h', 3600}, {'m', 60}, {'s', 1}};

// A duration given as text ("4h") or as a number of seconds, within [min_s, max_s].
Status read_duration(SpecFields& f, std::string_view key, int64_t min_s, int64_t max_s, int64_t* out) {
  const json::value* v = f.get(key);
  if (v == nullptr) return {};
  int64_t seconds = 0;
  if (v->is_string()) {
    auto parsed = parse_duration_s(v->as_string());
    if (!parsed.ok()) return Status::invalid_argument(f.name(key) + ": " + parsed.status().message());
    seconds = *parsed;
  } else if (v->is_int64()) {
    seconds = v->as_int64();
  } else {
    return Status::invalid_argument(f.name(key) + " must be a duration such as \"4h\" or a number of seconds");
  }
  if (seconds < min_s || seconds > max_s) {
    return Status::invalid_argument(f.name(key) + " must be between " + format_duration_s(min_s) + " and " +
                                    format_duration_s(max_s));
  }
  *out = seconds;
  return {};
}

Status read_schedule(SpecFields& top, AutoscaleSettings& a) {
  const json::value* v = top.get("schedule");
  if (v == nullptr) return {};
  if (!v->is_array()) return Status::invalid_argument("schedule must be a list of [[schedule]] tables");
  const json::array& windows = v->as_array();
  if (windows.size() > kMaxScheduleWindows) {
    return Status::invalid_argument("schedule: at most " + std::to_string(kMaxScheduleWindows) + " windows");
  }
  for (size_t i = 0; i < windows.size(); ++i) {
    const std::string where = "schedule[" + std::to_string(i) + "].";
    if (!windows[i].is_object())
      return Status::invalid_argument(where.substr(0, where.size() - 1) + " must be a table");
    SpecFields w(windows[i].as_object(), where);
    ScheduleWindow window;
    CS_RETURN_IF_ERROR(w.string("cron", &window.cron, true));
    if (auto cron = CronSchedule::parse(window.cron); !cron.ok()) {
      return Status::invalid_argument(where + "cron: " + cron.status().message());
    }
    CS_RETURN_IF_ERROR(w.integer("replicas", 1, kMaxReplicas, &window.replicas));
    if (window.replicas == 0) return Status::invalid_argument(where + "replicas is required");
    if (window.replicas > a.max_replicas) {
      return Status::invalid_argument(where + "replicas " + std::to_string(window.replicas) +
                                      " is above max_replicas " + std::to_string(a.max_replicas));
    }
    CS_RETURN_IF_ERROR(read_duration(w, "for", kMinScheduleWindowS, kMaxScheduleWindowS, &window.for_s));
    if (window.for_s == 0) return Status::invalid_argument(where + "for is required (how long the window lasts)");
    CS_RETURN_IF_ERROR(w.no_unknown_keys());
    a.schedules.push_back(std::move(window));
  }
  return {};
}

}  // namespace

Result<int64_t> parse_duration_s(std::string_view text) {
  const auto bad = [&] {
    return Status::invalid_argument("\"" + std::string(text.substr(0, 32)) +
                                    "\" is not a duration such as 90s, 15m, 4h, 2d or 1h30m");
  };
  if (text.empty()) return bad();
  int64_t total = 0;
  size_t next_unit = 0;  // units must come largest first, each at most once
  while (!text.empty()) {
    int64_t n = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
    if (ec != std::errc() || end == text.data() + text.size() || n < 0 || n > kMaxDurationS) return bad();
    const char unit = *end;
    size_t u = next_unit;
    while (u < std::size(kUnits) && kUnits[u].name != unit) ++u;
    if (u == std::size(kUnits)) return bad();
    total += n * kUnits[u].seconds;
    if (total > kMaxDurationS) return bad();
    next_unit = u + 1;
    text.remove_prefix(static_cast<size_t>(end - text.data()) + 1);
  }
  return total;
}

std::string format_duration_s(int64_t seconds) {
  if (seconds <= 0) return "0s";
  std::string out;
  for (const Unit& u : kUnits) {
    if (seconds >= u.seconds) {
      out += std::to_string(seconds / u.seconds) + u.name;
      seconds %= u.seconds;
    }
  }
  return out;
}

Status read_autoscale_fields(SpecFields& top, DeploymentSpec& spec, bool replicas_given) {
  AutoscaleSettings& a = spec.autoscale;
  CS_RETURN_IF_ERROR(top.integer("min_replicas", 1, kMaxReplicas, &a.min_replicas));
  CS_RETURN_IF_ERROR(top.integer("max_replicas", 1, kMaxReplicas, &a.max_replicas));
  CS_RETURN_IF_ERROR(top.number("max_total_price_per_day", 0, 1e12, &a.max_total_price_per_day));
  CS_RETURN_IF_ERROR(top.number("target_wait_s", 0.1, 86400, &a.target_wait_s));
  CS_RETURN_IF_ERROR(read_duration(top, "batch_deadline", kMinBatchDeadlineS, kMaxBatchDeadlineS, &a.batch_deadline_s));
  CS_RETURN_IF_ERROR(top.number("cooldown_s", 1, 86400, &a.cooldown_s));
  const bool scaling = a.min_replicas > 0 || a.max_replicas > 0;
  if (!scaling) {
    const json::object& o = top.object();
    for (const char* key : {"max_total_price_per_day", "target_wait_s", "batch_deadline", "cooldown_s", "schedule"}) {
      if (o.contains(key)) return Status::invalid_argument(std::string(key) + " needs min_replicas and max_replicas");
    }
    return {};
  }
  if (a.min_replicas == 0 || a.max_replicas == 0) {
    return Status::invalid_argument("min_replicas and max_replicas go together (autoscaling between them)");
  }
  if (a.min_replicas > a.max_replicas) {
    return Status::invalid_argument("min_replicas " + std::to_string(a.min_replicas) + " is above max_replicas " +
                                    std::to_string(a.max_replicas));
  }
  if (!replicas_given) spec.replicas = a.min_replicas;
  if (spec.replicas < a.min_replicas || spec.replicas > a.max_replicas) {
    return Status::invalid_argument("replicas " + std::to_string(spec.replicas) +
                                    " (the count to start with) must lie between min_replicas and max_replicas");
  }
  if (a.max_total_price_per_day > 0 && a.max_total_price_per_day < a.min_replicas * spec.max_price_per_day) {
    std::ostringstream m;
    m << "max_total_price_per_day " << a.max_total_price_per_day << " cannot pay for min_replicas " << a.min_replicas
      << " at max_price_per_day " << spec.max_price_per_day;
    return Status::invalid_argument(m.str());
  }
  return read_schedule(top, a);
}

void add_autoscale_json(const AutoscaleSettings& a, json::object& o) {
  if (!a.enabled()) return;
  o["min_replicas"] = a.min_replicas;
  o["max_replicas"] = a.max_replicas;
  if (a.max_total_price_per_day > 0) o["max_total_price_per_day"] = a.max_total_price_per_day;
  o["target_wait_s"] = a.target_wait_s;
  if (a.batch_deadline_s > 0) o["batch_deadline"] = format_duration_s(a.batch_deadline_s);
  o["cooldown_s"] = a.cooldown_s;
  if (!a.schedules.empty()) {
    json::array windows;
    for (const ScheduleWindow& w : a.schedules) {
      windows.push_back(json::object{{"cron", w.cron}, {"replicas", w.replicas}, {"for", format_duration_s(w.for_s)}});
    }
    o["schedule"] = std::move(windows);
  }
}

}  // namespace cellserve::fleet
