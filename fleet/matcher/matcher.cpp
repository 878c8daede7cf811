#include "fleet/matcher/matcher.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>
#include <utility>

namespace cellserve::fleet {
namespace {

std::string gib(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
  return buf;
}

std::string fixed1(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", v);
  return buf;
}

bool fail(std::string* why, std::string reason) {
  if (why != nullptr) *why = std::move(reason);
  return false;
}

// A replica row holding `r.processor_id` keeps that processor busy unless the row is Offline
// (the processor vanished; the row waits to be re-matched).
bool holds_processor(const Replica& r) { return !r.processor_id.empty() && r.state != ReplicaState::Offline; }

// A draining row (drained by hand, or past the count after a scale-down) gets no new home.
bool needs_processor(const Replica& r) {
  return !r.draining && (r.state == ReplicaState::Unmatched || r.state == ReplicaState::Offline);
}

std::set<std::string> busy_processors(const std::vector<Replica>& replicas) {
  std::set<std::string> busy;
  for (const Replica& r : replicas) {
    if (holds_processor(r)) busy.insert(r.processor_id);
  }
  return busy;
}

// Whether `p` is offered at all: online, enrolled (whatever else its record says; issue 43, item
// 1) and with a finite ask and speed (a bad record's would also break the offer's ordering).
bool offerable(const Processor& p) {
  return p.online && p.enrollment == Enrollment::Enrolled && std::isfinite(p.price_per_day) &&
         std::isfinite(p.benchmark.decode_tps);
}

// Whether offered processor `p` may take a row of `d` now: not busy, within its price, not refused
// and meeting its requirements and engine.
bool takes_row_of(const Processor& p, const Deployment& d, const std::set<std::string>& busy,
                  const RefusedHomes& refused) {
  return !busy.contains(p.id) && p.price_per_day <= d.spec.max_price_per_day &&
         !refused.contains({d.spec.name, p.id}) && meets(p, d.spec.requirements) && meets_now(p, d.spec.requirements) &&
         runs_engine(p, d.spec.engine);
}

// Cheapest first, then faster decode, then id: the order in which processors are offered.
bool offered_before(const Processor* a, const Processor* b) {
  if (a->price_per_day != b->price_per_day) return a->price_per_day < b->price_per_day;
  if (a->benchmark.decode_tps != b->benchmark.decode_tps) return a->benchmark.decode_tps > b->benchmark.decode_tps;
  return a->id < b->id;
}

// Plans the promotions of deployment `d` and rewrites `rows` (its replica rows, by index) as they
// will be once the hub has applied them: each promoted spare's state moves to the replica row.
void plan_promotions(const Deployment& d, std::vector<Replica*>& rows, std::vector<Promotion>& out) {
  const int replicas = d.spec.replicas;
  for (Replica* replica : rows) {
    if (replica->index >= replicas || !needs_processor(*replica)) continue;
    for (Replica* spare : rows) {
      if (spare->index < replicas || spare->state != ReplicaState::Ready || spare->draining) continue;
      out.push_back({d.spec.name, replica->index, spare->index});
      std::swap(replica->processor_id, spare->processor_id);
      std::swap(replica->state, spare->state);
      std::swap(replica->price_per_day, spare->price_per_day);
      break;
    }
  }
}

}  // namespace

bool meets(const Processor& p, const Requirements& r, std::string* why) {
  if (p.specs.ram_bytes < r.min_ram_bytes) {
    return fail(why, "ram " + gib(p.specs.ram_bytes) + " < " + gib(r.min_ram_bytes));
  }
  if (p.specs.cores < r.min_cores) {
    return fail(why, "cores " + std::to_string(p.specs.cores) + " < " + std::to_string(r.min_cores));
  }
  if (!r.arch.empty() && p.specs.arch != r.arch) {
    return fail(why, "arch " + (p.specs.arch.empty() ? std::string("unknown") : p.specs.arch) + " != " + r.arch);
  }
  if (p.benchmark.decode_tps < r.min_decode_tps) {
    return fail(why, "decode " + fixed1(p.benchmark.decode_tps) + " tok/s < " + fixed1(r.min_decode_tps) + " tok/s");
  }
  if (r.attested_only && !p.attested) return fail(why, "not attested");
  // By id, or by the label the operator fixed at approval; never by the name the device chose
  // for itself, which any device may claim (issue 43, item 5).
  if (!r.allow.empty() && std::find(r.allow.begin(), r.allow.end(), p.id) == r.allow.end() &&
      (p.label.empty() || std::find(r.allow.begin(), r.allow.end(), p.label) == r.allow.end())) {
    return fail(why, "not in the allow list");
  }
  return true;
}

bool meets_now(const Processor& p, const Requirements& r, std::string* why) {
  const DeviceState& d = p.device;
  if (r.charging_only && d.charging != true) {
    return fail(why, d.charging ? "not charging" : "charging unknown (the device shows no power supply)");
  }
  if (r.min_battery > 0 && d.battery_percent && *d.battery_percent < r.min_battery && !d.charging.value_or(false)) {
    return fail(why, "battery " + std::to_string(*d.battery_percent) + "% < " + std::to_string(r.min_battery) + "%");
  }
  if (const auto t = d.temperature_c(); r.max_temperature_c > 0 && t && *t > r.max_temperature_c) {
    return fail(why, "temperature " + fixed1(*t) + " °C > " + fixed1(r.max_temperature_c) + " °C");
  }
  if (!d.paused.empty()) return fail(why, "paused: " + d.paused);
  return true;
}

bool runs_engine(const Processor& p, const EngineSettings& e, std::string* why) {
  if (p.simulated && !e.simulated) return fail(why, "simulated processor; the deployment is not simulated");
  if (!p.simulated && e.simulated) return fail(why, "the deployment is simulated; the processor is not");
  return true;
}

MatchPlan plan_matches(const std::vector<Processor>& processors, const std::vector<Deployment>& deployments,
                       const std::vector<Replica>& replicas, const RefusedHomes& refused) {
  MatchPlan plan;
  std::set<std::string> busy = busy_processors(replicas);

  std::vector<const Deployment*> order;
  for (const Deployment& d : deployments) order.push_back(&d);
  std::stable_sort(order.begin(), order.end(), [](const Deployment* a, const Deployment* b) {
    return std::tie(a->created_ms, a->spec.name) < std::tie(b->created_ms, b->spec.name);
  });

  std::vector<const Processor*> offered;
  for (const Processor& p : processors) {
    if (offerable(p)) offered.push_back(&p);
  }
  std::sort(offered.begin(), offered.end(), offered_before);

  // The rows of each deployment, copied so promotions can be applied in place.
  std::map<std::string, std::vector<Replica>> rows_by_deployment;
  for (const Replica& r : replicas) rows_by_deployment[r.deployment].push_back(r);

  for (const Deployment* d : order) {
    auto it = rows_by_deployment.find(d->spec.name);
    if (it == rows_by_deployment.end()) continue;
    std::vector<Replica*> rows;
    for (Replica& r : it->second) rows.push_back(&r);
    std::sort(rows.begin(), rows.end(), [](const Replica* a, const Replica* b) { return a->index < b->index; });

    plan_promotions(*d, rows, plan.promotions);

    for (const Replica* row : rows) {
      if (!needs_processor(*row)) continue;
      for (const Processor* p : offered) {
        if (!takes_row_of(*p, *d, busy, refused)) continue;
        plan.assignments.push_back({d->spec.name, row->index, p->id, p->price_per_day});
        busy.insert(p->id);
        break;
      }
    }
  }
  return plan;
}

std::vector<double> free_asks(const std::vector<Processor>& processors, const Deployment& d,
                              const std::vector<Replica>& replicas, const RefusedHomes& refused) {
  const std::set<std::string> busy = busy_processors(replicas);
  std::vector<double> asks;
  for (const Processor& p : processors) {
    // As plan_matches() would offer them.
    if (offerable(p) && takes_row_of(p, d, busy, refused)) asks.push_back(p.price_per_day);
  }
  std::sort(asks.begin(), asks.end());
  return asks;
}

MarketFigures market(const std::vector<Processor>& processors, const std::vector<Replica>& replicas,
                     const MarketQuery& q) {
  MarketFigures f;
  std::set<std::string> busy = busy_processors(replicas);
  std::vector<double> available_asks;
  double ask_sum = 0;
  int online_eligible = 0;
  for (const Processor& p : processors) {
    if (!meets(p, q.requirements) || p.simulated != q.simulated) continue;
    ++f.eligible;
    if (!p.online) continue;
    ++online_eligible;
    ask_sum += p.price_per_day;
    if (busy.count(p.id) == 0) available_asks.push_back(p.price_per_day);
  }
  f.available = static_cast<int>(available_asks.size());
  if (online_eligible > 0) f.average_ask = ask_sum / online_eligible;
  if (q.replicas >= 1 && static_cast<size_t>(q.replicas) <= available_asks.size()) {
    std::nth_element(available_asks.begin(), available_asks.begin() + (q.replicas - 1), available_asks.end());
    f.price_for_replicas = available_asks[q.replicas - 1];
  }
  return f;
}

}  // namespace cellserve::fleet
