#include "fleet/matcher/autoscale.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>

#include "fleet/spec/deployment_spec.h"

namespace cellserve::fleet {
namespace {

// The batch backlog is sized to end this much before its deadline.
constexpr double kBatchMargin = 0.9;

std::string one_decimal(double v) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f", v);
  return text;
}

// The most replicas max_total_price_per_day pays for: the new ones on the free devices, cheapest
// first, as long as their asks fit what is left; without free devices, rows that will be matched
// later at max_price_per_day at most.
int budget_cap(const DeploymentSpec& spec, const ScalingSignals& s) {
  const double total = spec.autoscale.max_total_price_per_day;
  if (total <= 0) return kMaxReplicas;
  double room = total - s.committed_price_per_day + 1e-9;
  if (room <= 0) return s.replicas;
  if (s.free_asks.empty()) {
    if (spec.max_price_per_day <= 0) return kMaxReplicas;
    const double more = std::min(std::floor(room / spec.max_price_per_day), static_cast<double>(kMaxReplicas));
    return std::min(kMaxReplicas, s.replicas + static_cast<int>(more));
  }
  int more = 0;
  for (const double ask : s.free_asks) {
    if (ask > room || s.replicas + more >= kMaxReplicas) break;
    room -= ask;
    ++more;
  }
  // Every free device fits: the devices are the limit, not the budget.
  return more == static_cast<int>(s.free_asks.size()) ? kMaxReplicas : s.replicas + more;
}

// The replicas the batch backlog needs to end by its deadline; 0 when there is none or its rate
// is not known yet.
int batch_need(const DeploymentSpec& spec, const ScalingSignals& s) {
  if (s.batch_lines_left <= 0 || s.batch_deadline_ms <= 0 || s.lines_per_replica_s <= 0) return 0;
  const double left_s = static_cast<double>(s.batch_deadline_ms - s.now_ms) / 1000.0;
  // More new replicas than lines left would find nothing to do.
  const double most =
      std::min(static_cast<double>(s.replicas) + static_cast<double>(s.batch_lines_left), double{kMaxReplicas});
  if (left_s <= 0) return static_cast<int>(std::min(most, static_cast<double>(spec.autoscale.max_replicas)));  // late
  const double need =
      std::ceil(static_cast<double>(s.batch_lines_left) / (s.lines_per_replica_s * left_s * kBatchMargin));
  return static_cast<int>(std::clamp(need, 1.0, most));
}

std::string batch_reason(const ScalingSignals& s, int need) {
  const double rate = s.lines_per_replica_s * std::max(1, s.replicas);
  const auto done_ms = s.now_ms + static_cast<int64_t>(static_cast<double>(s.batch_lines_left) / rate * 1000.0);
  return "batch " + s.batch_id + ": " + std::to_string(s.batch_lines_left) + " lines left would end about " +
         scaling_time_text(done_ms, s.now_ms) + " at " + std::to_string(s.replicas) + " replicas, after its deadline " +
         scaling_time_text(s.batch_deadline_ms, s.now_ms) + "; it needs " + std::to_string(need);
}

// A rise to `want` for `why`, as far as max_replicas, the budget and (unless `floor`) the free
// devices allow.
ScalingDecision rise(const DeploymentSpec& spec, const ScalingSignals& s, int want, const std::string& why,
                     bool floor) {
  ScalingDecision d{"scale_up", std::min(want, spec.autoscale.max_replicas), why, ""};
  if (d.to_replicas < want) d.limit = "max_replicas";
  if (const int cap = budget_cap(spec, s); cap < d.to_replicas) {
    d.to_replicas = cap;
    d.limit = "budget";
  }
  if (!floor && s.replicas + s.free_devices < d.to_replicas) {
    d.to_replicas = s.replicas + s.free_devices;
    d.limit = "devices";
  }
  if (d.limit == "max_replicas") {
    d.reason += "; max_replicas " + std::to_string(spec.autoscale.max_replicas) + " reached";
  } else if (d.limit == "budget") {
    char text[96];
    std::snprintf(text, sizeof(text), "; max_total_price_per_day %g pays for %d",
                  spec.autoscale.max_total_price_per_day, std::max(d.to_replicas, s.replicas));
    d.reason += text;
  } else if (d.limit == "devices") {
    d.reason += "; " + std::to_string(s.free_devices) + " free device(s) meet the requirements";
  }
  if (d.to_replicas <= s.replicas) {
    d.action = "held";
    d.to_replicas = s.replicas;
  }
  return d;
}

}  // namespace

ScalingDecision decide_scaling(const DeploymentSpec& spec, const ScalingSignals& s) {
  const AutoscaleSettings& a = spec.autoscale;
  if (!a.enabled()) return {};
  if (s.replicas > a.max_replicas) {
    return {"scale_down", a.max_replicas, "above max_replicas " + std::to_string(a.max_replicas), ""};
  }
  const int scheduled = std::min(s.schedule_replicas, a.max_replicas);
  const int floor = std::max(a.min_replicas, scheduled);
  if (s.replicas < floor) {
    const std::string why = scheduled > a.min_replicas
                                ? s.schedule_window + " asks for " + std::to_string(scheduled) + " replicas"
                                : "below min_replicas " + std::to_string(a.min_replicas);
    return rise(spec, s, floor, why, true);
  }
  // A rise wanted by the queue or the batches.
  int want = s.replicas;
  std::string why;
  if (s.waiting > 0 && s.queue_wait_s > a.target_wait_s && s.coming_up == 0) {
    want = s.replicas + 1;
    why = "queue wait " + one_decimal(s.queue_wait_s) + " s > target_wait_s " + one_decimal(a.target_wait_s) + " (" +
          std::to_string(s.waiting) + " waiting)";
  }
  const int need = batch_need(spec, s);
  // As for the queue: the rows on their way first, so the rate is measured on them.
  if (need > want && need > s.replicas && s.coming_up == 0) {
    want = need;
    why = batch_reason(s, need);
  }
  if (want > s.replicas) return rise(spec, s, want, why, false);

  // A fall: only when nothing waits and no batch needs them, after the cool-down since the last rise.
  const bool batch_unsized = s.batch_lines_left > 0 && need == 0;
  const bool cooled = s.now_ms - s.last_scale_up_ms >= static_cast<int64_t>(a.cooldown_s * 1000);
  if (s.replicas > floor && s.waiting == 0 && s.idle_replicas > 0 && !batch_unsized && cooled) {
    const int to = std::max({floor, s.replicas - s.idle_replicas, need});
    if (to < s.replicas) {
      return {"scale_down", to,
              std::to_string(s.replicas - to) + " replica(s) idle for cooldown_s " + one_decimal(a.cooldown_s) + " s",
              ""};
    }
  }
  return {};
}

std::string scaling_time_text(int64_t at_ms, int64_t now_ms) {
  const auto at = static_cast<time_t>(at_ms / 1000);
  const auto now = static_cast<time_t>(now_ms / 1000);
  tm t{};
  tm n{};
  gmtime_r(&at, &t);
  gmtime_r(&now, &n);
  char text[48];
  if (t.tm_year == n.tm_year && t.tm_yday == n.tm_yday) {
    std::strftime(text, sizeof(text), "%H:%M UTC", &t);
  } else {
    std::strftime(text, sizeof(text), "%b %d %H:%M UTC", &t);
  }
  return text;
}

}  // namespace cellserve::fleet
