#include "fleet/spec/device_state.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <boost/json.hpp>

#include "fleet/spec/json_number.h"
#include "fleet/spec/peer_text.h"

namespace cellserve::fleet {
namespace {

namespace json = boost::json;

Status bad_device_field(const std::string& what) { return Status::invalid_argument("device." + what); }

// A number from the peer, within [lo, hi]; nullopt when absent or null.
Result<std::optional<double>> bounded(const json::object& o, std::string_view key, double lo, double hi) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr || v->is_null()) return std::optional<double>();
  const std::optional<double> number = json_as_number(*v);
  if (!number) return bad_device_field(std::string(key) + " must be a number");
  const double d = *number;
  if (!std::isfinite(d) || d < lo || d > hi) {
    return bad_device_field(std::string(key) + " must be between " + std::to_string(lo) + " and " + std::to_string(hi));
  }
  return std::optional<double>(d);
}

std::string fixed(double v, int digits) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

// The reason a paused agent gives is shown to operators: bounded, one line.
constexpr size_t kMaxPausedChars = 200;
// Memory beyond any device (16 EiB would not fit a double exactly anyway): garbage.
constexpr double kMaxMemoryBytes = 1ull << 50;

}  // namespace

json::value to_json(const DeviceState& s) {
  json::object o;
  if (s.battery_percent) o["battery_percent"] = *s.battery_percent;
  if (s.charging) o["charging"] = *s.charging;
  if (s.battery_temp_c) o["battery_temp_c"] = *s.battery_temp_c;
  if (s.max_thermal_c) o["max_thermal_c"] = *s.max_thermal_c;
  if (s.cpu_freq_ratio) o["cpu_freq_ratio"] = *s.cpu_freq_ratio;
  if (s.mem_available_bytes) o["mem_available_bytes"] = *s.mem_available_bytes;
  if (!s.paused.empty()) o["paused"] = s.paused;
  return o;
}

Result<DeviceState> device_state_from_json(const json::value& v) {
  if (!v.is_object()) return bad_device_field("must be an object");
  const json::object& o = v.as_object();
  DeviceState s;
  CS_ASSIGN_OR_RETURN(auto battery, bounded(o, "battery_percent", 0, 100));
  if (battery) {
    if (*battery != std::floor(*battery)) return bad_device_field("battery_percent must be an integer");
    s.battery_percent = static_cast<int>(*battery);
  }
  if (const json::value* c = o.if_contains("charging"); c != nullptr && !c->is_null()) {
    if (!c->is_bool()) return bad_device_field("charging must be true or false");
    s.charging = c->as_bool();
  }
  CS_ASSIGN_OR_RETURN(s.battery_temp_c, bounded(o, "battery_temp_c", -100, 200));
  CS_ASSIGN_OR_RETURN(s.max_thermal_c, bounded(o, "max_thermal_c", -100, 200));
  CS_ASSIGN_OR_RETURN(s.cpu_freq_ratio, bounded(o, "cpu_freq_ratio", 0, 1));
  CS_ASSIGN_OR_RETURN(auto mem, bounded(o, "mem_available_bytes", 0, kMaxMemoryBytes));
  if (mem) s.mem_available_bytes = static_cast<uint64_t>(*mem);
  if (const json::value* p = o.if_contains("paused"); p != nullptr && !p->is_null()) {
    if (!p->is_string()) return bad_device_field("paused must be a string");
    const json::string& text = p->as_string();
    if (text.size() > kMaxPausedChars)
      return bad_device_field("paused is longer than " + std::to_string(kMaxPausedChars));
    if (std::any_of(text.begin(), text.end(), [](char ch) { return ch == '\n' || ch == '\r'; })) {
      return bad_device_field("paused must be one line");
    }
    s.paused = peer_text(text, kMaxPausedChars);  // and no other control character either
  }
  return s;
}

std::string device_state_summary(const DeviceState& s) {
  std::string out;
  auto add = [&out](const std::string& part) {
    if (!out.empty()) out += ", ";
    out += part;
  };
  if (s.battery_percent || s.charging) {
    std::string part = "battery";
    if (s.battery_percent) part += " " + std::to_string(*s.battery_percent) + "%";
    if (s.charging) part += *s.charging ? " charging" : " discharging";
    add(part);
  }
  if (const auto t = s.temperature_c()) add(fixed(*t, 1) + " °C");
  if (s.throttled())
    add("throttled to " + std::to_string(static_cast<int>(std::lround(*s.cpu_freq_ratio * 100))) + "%");
  if (s.mem_available_bytes) add(fixed(static_cast<double>(*s.mem_available_bytes) / (1ull << 30), 1) + " GiB free");
  if (!s.paused.empty()) add("paused: " + s.paused);
  return out;
}

}  // namespace cellserve::fleet
