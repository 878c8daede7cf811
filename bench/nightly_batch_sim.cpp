// The nightly batch with autoscaling, simulated (docs/autoscale.md, "Measured"): the hub's own
// Autoscaler and matcher over a real SQLite store, on a manual clock, with simulated devices
// that take `--load-s` from matched to ready and `--line-s` per batch line (one line at a time).
// A batch of `--lines` lines is created at 01:00 UTC with batch_deadline `--deadline-h`; the
// deployment autoscales between --min and --max (optionally with a [[schedule]] window at 01:00
// for the deadline with --schedule N replicas). Prints the replicas over time, when the batch
// ended against its deadline, and the device cost against the smallest fixed fleet that meets
// the same deadline (running all day, as a fixed deployment does).
//
//   build/bench/nightly_batch_sim [--lines 10000] [--line-s 60] [--load-s 180] [--devices 80]
//                                 [--price 0.5] [--min 2] [--max 60] [--deadline-h 4] [--schedule 0]
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "fleet/crypto/identity.h"
#include "fleet/hub/autoscaler.h"
#include "fleet/matcher/matcher.h"
#include "fleet/store/open_store.h"

namespace fs = std::filesystem;
using namespace cellserve;
using namespace cellserve::fleet;

namespace {

struct Options {
  int lines = 10000;
  double line_s = 60;
  double load_s = 180;
  int devices = 80;
  double price = 0.5;
  int min = 2;
  int max = 60;
  double deadline_h = 4;
  int schedule = 0;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    const double v = std::atof(argv[i + 1]);
    if (k == "--lines")
      o.lines = static_cast<int>(v);
    else if (k == "--line-s")
      o.line_s = v;
    else if (k == "--load-s")
      o.load_s = v;
    else if (k == "--devices")
      o.devices = static_cast<int>(v);
    else if (k == "--price")
      o.price = v;
    else if (k == "--min")
      o.min = static_cast<int>(v);
    else if (k == "--max")
      o.max = static_cast<int>(v);
    else if (k == "--deadline-h")
      o.deadline_h = v;
    else if (k == "--schedule")
      o.schedule = static_cast<int>(v);
    else {
      std::fprintf(stderr, "nightly_batch_sim: unknown option %s\n", k.c_str());
      std::exit(2);
    }
  }
  return o;
}

constexpr int64_t kMidnight = 1'796'601'600'000;  // 2026-12-07 00:00 UTC

// A store write the simulation cannot go on without.
void must(const Status& s, const char* what) {
  if (s.ok()) return;
  std::fprintf(stderr, "nightly_batch_sim: %s: %s\n", what, s.message().c_str());
  std::exit(1);
}

struct Sim {
  explicit Sim(const Options& o) : o(o), clock(kMidnight + 55 * 60'000), state(HubOptions{}, clock) {}
  const Options& o;
  ManualClock clock;
  HubState state;
  ReplicaForwarder forwarder{state, [](const std::string&, bool) { return nullptr; }};
  Batch batch;
  Autoscaler autoscaler{state, forwarder, [this] {
                          std::vector<Batch> out;
                          if (batch.total > 0 && batch.completed < batch.total) out.push_back(batch);
                          return Result<std::vector<Batch>>(out);
                        }};
  std::map<int, int64_t> ready_at;                     // matched rows: when their device is loaded
  std::map<int, int64_t> line_ends;                    // rows running a line: when it ends
  std::map<int, ReplicaRegistry::InFlight> in_flight;  // ... counted in the registry meanwhile
  int lines_started = 0;
  double cost = 0;
  int most = 0;
};

// One second of the fleet: lines end, loaded devices turn ready, drained rows go, matching,
// free rows take lines.
void step(Sim& s, int64_t now) {
  Store& store = *s.state.store;
  for (auto it = s.line_ends.begin(); it != s.line_ends.end();) {
    if (it->second > now) {
      ++it;
      continue;
    }
    ++s.batch.completed;
    s.in_flight.erase(it->first);
    it = s.line_ends.erase(it);
  }
  auto deployment = store.deployment("nightly");
  auto rows = store.replicas("nightly");
  if (!deployment.ok() || !rows.ok()) std::exit(1);
  const int total = (*deployment)->spec.replicas;
  for (Replica r : *rows) {
    if (r.draining && !s.line_ends.contains(r.index)) {
      must(store.remove_replica("nightly", r.index, now), "removing a drained row");
      s.ready_at.erase(r.index);
      continue;
    }
    if (r.state == ReplicaState::Matched && s.ready_at.contains(r.index) && s.ready_at[r.index] <= now) {
      r.state = ReplicaState::Ready;
      r.secrets_version = 1;
      must(store.update_replica(r, now), "updating a row");
    }
  }
  auto processors = store.processors();
  auto deployments = store.deployments();
  rows = store.replicas("");
  const MatchPlan plan = plan_matches(*processors, *deployments, *rows);
  for (const Assignment& a : plan.assignments) {
    for (Replica r : *rows) {
      if (r.index != a.index) continue;
      r.processor_id = a.processor_id;
      r.price_per_day = a.price_per_day;
      r.state = ReplicaState::Matched;
      must(store.update_replica(r, now), "updating a row");
      s.ready_at[r.index] = now + static_cast<int64_t>(s.o.load_s * 1000);
    }
  }
  s.state.refresh_registry();
  rows = store.replicas("nightly");
  int ready = 0;
  for (const Replica& r : *rows) {
    if (r.state != ReplicaState::Ready) continue;
    ++ready;
    if (r.draining || r.index >= total || s.line_ends.contains(r.index) || s.lines_started >= s.batch.total) continue;
    if (now < s.batch.created_ms) continue;
    ++s.lines_started;
    s.line_ends[r.index] = now + static_cast<int64_t>(s.o.line_s * 1000);
    s.in_flight[r.index] = s.state.registry.begin_request("nightly", r.index);
  }
  s.cost += ready * s.o.price / 86400.0;
  s.most = std::max(s.most, ready);
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  const fs::path dir = fs::temp_directory_path() / ("cs-nightly-sim-" + random_hex(6));
  fs::create_directories(dir);
  Sim s(o);
  auto opened = open_store((dir / "hub.db").string());
  if (!opened.ok()) return std::fprintf(stderr, "%s\n", opened.status().message().c_str()), 1;
  s.state.store = std::move(*opened);
  s.state.member = std::make_unique<ClusterMember>(s.state.store->cluster(), s.clock, std::chrono::seconds(1),
                                                   [](const std::string&) {});
  s.state.member->set_peer_url("http://127.0.0.1:1");
  must(s.state.member->heartbeat(), "the hub's heartbeat");
  for (int i = 0; i < o.devices; ++i) {
    Processor p;
    p.id = "p" + std::to_string(i);
    p.name = p.id;
    p.price_per_day = o.price;
    p.simulated = true;
    p.online = true;
    p.registered_ms = 1;
    must(s.state.store->upsert_processor(p), "adding a device");
  }
  Deployment d;
  d.spec.name = "nightly";
  d.spec.model_url = "http://127.0.0.1:9/m.gguf";
  d.spec.model_sha256 = std::string(64, 'a');
  d.spec.max_price_per_day = o.price;
  d.spec.engine.simulated = true;
  d.spec.autoscale.min_replicas = o.min;
  d.spec.autoscale.max_replicas = o.max;
  d.spec.autoscale.cooldown_s = 300;
  d.spec.autoscale.target_wait_s = 10;
  const auto deadline_s = static_cast<int64_t>(o.deadline_h * 3600);
  d.spec.autoscale.batch_deadline_s = deadline_s;
  if (o.schedule > 0) d.spec.autoscale.schedules = {{"0 1 * * *", o.schedule, deadline_s}};
  d.spec.replicas = o.min;
  d.created_ms = kMidnight;
  if (!s.state.store->create_deployment(d).ok()) return 1;
  s.batch.id = "batch_nightly";
  s.batch.deployment = "nightly";
  s.batch.deployment_created_ms = kMidnight;
  s.batch.status = BatchStatus::InProgress;
  s.batch.created_ms = kMidnight + 3600'000;
  s.batch.expires_ms = s.batch.created_ms + 24 * 3600'000;
  s.batch.total = o.lines;
  const int64_t deadline_ms = s.batch.created_ms + deadline_s * 1000;

  std::printf(
      "nightly batch: %d lines of %.0f s each at 01:00 UTC, deadline %.1f h; devices load in %.0f s; "
      "%d devices at %.2f/day; autoscale %d..%d%s\n",
      o.lines, o.line_s, o.deadline_h, o.load_s, o.devices, o.price, o.min, o.max,
      o.schedule > 0 ? (" with a schedule window of " + std::to_string(o.schedule)).c_str() : "");
  std::printf("%-10s %9s %6s %11s\n", "time", "replicas", "ready", "lines done");
  int64_t ended_ms = 0;
  const int64_t stop_ms = kMidnight + 24 * 3600'000;
  for (int64_t now = s.clock.wall_ms(); now < stop_ms; now = s.clock.wall_ms()) {
    (void)s.state.member->lead();
    {
      std::lock_guard lock(s.state.state_mu);
      auto deployments = s.state.store->deployments();
      auto processors = s.state.store->processors();
      s.autoscaler.round(*deployments, *processors, now);
      step(s, now);
    }
    if (ended_ms == 0 && s.batch.completed >= s.batch.total) ended_ms = now;
    auto dep = s.state.store->deployment("nightly");
    const int replicas = (*dep)->spec.replicas;
    if ((now - kMidnight) % (15 * 60'000) == 0 && now >= s.batch.created_ms - 5 * 60'000 &&
        (ended_ms == 0 || now <= ended_ms + 3600'000)) {
      int ready = 0;
      for (const ReplicaView& v : s.state.registry.replicas("nightly")) ready += v.state == ReplicaState::Ready;
      std::printf("%-10s %9d %6d %11d\n", scaling_time_text(now, now).c_str(), replicas, ready, s.batch.completed);
    }
    if (ended_ms != 0 && replicas == o.min && now > ended_ms + 3600'000) break;
    s.clock.advance(std::chrono::seconds(1));
  }
  // The day's cost: the rest of the day at min replicas, as the run above ends early.
  const double day_cost = s.cost + o.min * o.price * static_cast<double>(stop_ms - s.clock.wall_ms()) / 86400'000.0;
  const auto fixed = static_cast<int>(std::ceil(o.lines * o.line_s / (static_cast<double>(deadline_s) - o.load_s)));
  const double fixed_cost = fixed * o.price;
  auto events = s.state.store->scaling_events().latest("nightly", 500);
  std::printf("batch ended %s, deadline %s (%s); most replicas ready at once %d; scaling events %zu\n",
              ended_ms ? scaling_time_text(ended_ms, ended_ms).c_str() : "never",
              scaling_time_text(deadline_ms, deadline_ms).c_str(),
              ended_ms && ended_ms <= deadline_ms ? "met" : "MISSED", s.most, events.ok() ? events->size() : 0);
  std::printf(
      "device cost for the day: autoscaled %.2f; smallest fixed fleet meeting the deadline (%d replicas all "
      "day) %.2f; ratio %.2f\n",
      day_cost, fixed, fixed_cost, day_cost / fixed_cost);
  s.state.member.reset();
  s.state.store.reset();
  fs::remove_all(dir);
  return ended_ms && ended_ms <= deadline_ms ? 0 : 3;
}
