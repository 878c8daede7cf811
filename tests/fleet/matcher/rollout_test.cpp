#include "fleet/matcher/rollout.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace cellserve::fleet {
namespace {

using Kind = RolloutStep::Kind;
constexpr uint64_t kGiB = 1ULL << 30;

Processor device(const std::string& id, uint64_t ram_gib = 16) {
  Processor p;
  p.id = id;
  p.specs.ram_bytes = ram_gib * kGiB;
  p.specs.cores = 4;
  p.benchmark.decode_tps = 10;
  p.price_per_day = 1;
  p.online = true;
  return p;
}

DeploymentSpec spec_with(const std::string& sha, int replicas, int spares = 0) {
  DeploymentSpec s;
  s.name = "risk";
  s.model_url = "https://models.test/" + sha + ".gguf";
  s.model_sha256 = std::string(64, sha[0]);
  s.replicas = replicas;
  s.spares = spares;
  s.max_price_per_day = 5;
  return s;
}

// A small fleet run the way the hub runs it, one reconcile round at a time: remove what finished
// draining, apply the rollout's steps, match (the real matcher), then every matched device
// loads what its row serves at once.
struct Fleet {
  DeploymentSpec spec;
  std::vector<Processor> devices;
  std::vector<Replica> rows;
  std::map<int, int> in_flight;

  Fleet(DeploymentSpec s, int n_devices) : spec(std::move(s)) {
    for (int i = 0; i < n_devices; ++i) devices.push_back(device("p" + std::to_string(i)));
    for (int i = 0; i < spec.replicas + spec.spares; ++i) {
      Replica r;
      r.deployment = spec.name;
      r.index = i;
      r.serving = serving_of(spec);
      rows.push_back(r);
    }
    round();
  }

  Replica* at(int index) {
    for (Replica& r : rows) {
      if (r.index == index) return &r;
    }
    return nullptr;
  }

  std::map<std::string, const Processor*> by_id() const {
    std::map<std::string, const Processor*> m;
    for (const Processor& p : devices) m[p.id] = &p;
    return m;
  }

  std::vector<RolloutStep> plan() const {
    return plan_rollout(spec, rows, in_flight, by_id(), free_devices(devices, rows, spec, {}));
  }

  void apply(const RolloutStep& step) {
    Replica* r = at(step.index);
    switch (step.kind) {
      case Kind::AddSurge: {
        Replica s;
        s.deployment = spec.name;
        s.index = kSurgeIndexBase + step.index;
        s.serving = serving_of(spec);
        rows.push_back(s);
        break;
      }
      case Kind::SwapIn: {
        Replica* surge = at(kSurgeIndexBase + step.index);
        ASSERT_NE(surge, nullptr);
        ASSERT_NE(r, nullptr);
        std::swap(surge->index, r->index);
        surge->draining = false;
        r->draining = true;
        break;
      }
      case Kind::DropSurge:
        r->draining = true;
        break;
      case Kind::Drain:
        r->reloading = true;
        break;
      case Kind::Reload:
        r->reloading = false;
        if (!(r->serving == serving_of(spec))) r->state = ReplicaState::Matched;
        r->serving = serving_of(spec);
        if (!step.keep_device) {
          r->processor_id.clear();
          r->state = ReplicaState::Unmatched;
        }
        break;
    }
  }

  // One reconcile round; returns its rollout steps.
  std::vector<RolloutStep> round() {
    const int total = spec.replicas + spec.spares;
    std::erase_if(rows, [&](const Replica& r) { return r.index >= total && r.draining && in_flight[r.index] == 0; });
    const std::vector<RolloutStep> steps = plan();
    for (const RolloutStep& s : steps) apply(s);
    std::vector<Deployment> deployments{Deployment{spec, 1}};
    for (const Assignment& a : plan_matches(devices, deployments, rows).assignments) {
      Replica* r = at(a.index);
      r->processor_id = a.processor_id;
      r->state = ReplicaState::Matched;
    }
    for (Replica& r : rows) {
      if (r.state == ReplicaState::Matched) r.state = ReplicaState::Ready;
    }
    return steps;
  }

  // Replica rows (index < replicas) that take requests now: ready, not draining or reloading.
  int serving_replicas() const {
    int n = 0;
    for (const Replica& r : rows) {
      n += r.index < spec.replicas && r.state == ReplicaState::Ready && !r.draining && !r.reloading;
    }
    return n;
  }

  bool done() const {
    const auto ids = by_id();
    for (const Replica& r : rows) {
      const auto d = ids.find(r.processor_id);
      if (outdated(r, spec, d == ids.end() ? nullptr : d->second)) return false;
      if (r.index >= kSurgeIndexBase) return false;
    }
    return serving_replicas() == spec.replicas;
  }
};

TEST(Rollout, NothingToDoWhileEveryRowServesTheSpec) {
  Fleet f(spec_with("a", 2, 1), 4);
  EXPECT_EQ(f.serving_replicas(), 2);
  EXPECT_TRUE(f.plan().empty());
}

TEST(Rollout, NewRowsSurgeOntoFreeDevicesAndTakeTheAddressOnceReady) {
  Fleet f(spec_with("a", 2), 4);
  const std::string first = f.at(0)->processor_id;
  f.spec = spec_with("b", 2);
  EXPECT_EQ(f.plan(), (std::vector<RolloutStep>{{Kind::AddSurge, 0}, {Kind::AddSurge, 1}}));
  f.round();  // the surge rows are matched to the two free devices and load
  EXPECT_EQ(f.serving_replicas(), 2);
  EXPECT_EQ(f.plan(), (std::vector<RolloutStep>{{Kind::SwapIn, 0}, {Kind::SwapIn, 1}}));
  f.in_flight[0] = 1;  // a request still running on the old device of replica 0
  f.round();
  EXPECT_EQ(f.at(0)->serving, serving_of(f.spec));
  EXPECT_NE(f.at(0)->processor_id, first);
  ASSERT_NE(f.at(kSurgeIndexBase + 0), nullptr);  // the old row drains at the surge index
  EXPECT_TRUE(f.at(kSurgeIndexBase + 0)->draining);
  EXPECT_EQ(f.at(kSurgeIndexBase + 0)->processor_id, first);
  f.in_flight.clear();  // (the hub's counters follow the device; here the test moves them)
  f.in_flight[kSurgeIndexBase + 0] = 1;
  f.round();
  EXPECT_NE(f.at(kSurgeIndexBase + 0), nullptr) << "removed with a request in flight";
  f.in_flight.clear();
  f.round();
  EXPECT_TRUE(f.done());
}

TEST(Rollout, OneFreeDeviceReplacesEveryReplicaWithoutLosingOne) {
  Fleet f(spec_with("a", 4), 5);
  f.spec = spec_with("b", 4);
  int rounds = 0;
  while (!f.done() && rounds < 40) {
    f.round();
    ++rounds;
    EXPECT_EQ(f.serving_replicas(), 4) << "round " << rounds;
  }
  EXPECT_TRUE(f.done()) << rounds << " rounds";
  EXPECT_LE(rounds, 4 * 3);
}

TEST(Rollout, AReplacedRowStillDrainingIsWaitedForNotReloadedAround) {
  // Its device frees up once its last request ends: the next replica surges onto it instead of
  // going out of service for an in-place reload (found end to end, with requests in flight).
  Fleet f(spec_with("a", 2), 3);
  f.spec = spec_with("b", 2);
  f.round();  // surge for 0 on p2
  f.in_flight[0] = 1;
  f.round();  // swapped in: p0 drains at the surge index with its request
  f.in_flight.clear();
  f.in_flight[kSurgeIndexBase] = 1;
  EXPECT_TRUE(f.plan().empty());
  f.round();
  ASSERT_NE(f.at(kSurgeIndexBase), nullptr);
  f.in_flight.clear();
  // Removed at the start of the round; p0 is free again and replica 1 surges onto it.
  EXPECT_EQ(f.round(), (std::vector<RolloutStep>{{Kind::AddSurge, 1}}));
  EXPECT_EQ(f.serving_replicas(), 2);
}

TEST(Rollout, WithNoFreeDeviceOneReplicaAtATimeReloadsInPlace) {
  Fleet f(spec_with("a", 3), 3);
  f.spec = spec_with("b", 3);
  EXPECT_EQ(f.plan(), (std::vector<RolloutStep>{{Kind::Drain, 0}}));
  f.in_flight[0] = 2;
  f.round();
  EXPECT_TRUE(f.at(0)->reloading);
  EXPECT_TRUE(f.plan().empty()) << "reloaded with requests in flight, or a second replica drained";
  f.in_flight.clear();
  int rounds = 0;
  while (!f.done() && rounds < 40) {
    f.round();
    ++rounds;
    EXPECT_GE(f.serving_replicas(), 2) << "round " << rounds;
  }
  EXPECT_TRUE(f.done()) << rounds << " rounds";
  for (int i = 0; i < 3; ++i) EXPECT_EQ(f.at(i)->processor_id, "p" + std::to_string(i));  // reloaded where they were
}

TEST(Rollout, ANewSpecThatFailsToLoadStopsTheRolloutWithTheOldRowsServing) {
  // In place: the first reloaded replica failed; the second is not drained for the same fate.
  Fleet f(spec_with("a", 2), 2);
  f.spec = spec_with("b", 2);
  f.apply({Kind::Drain, 0});
  f.apply({Kind::Reload, 0, true});
  f.at(0)->state = ReplicaState::Failed;
  EXPECT_TRUE(f.plan().empty());
  // Surging: a failed surge row never takes the address, and nothing is reloaded around it.
  Fleet g(spec_with("a", 2), 3);
  g.spec = spec_with("b", 2);
  g.round();
  ASSERT_NE(g.at(kSurgeIndexBase), nullptr);
  g.at(kSurgeIndexBase)->state = ReplicaState::Failed;
  EXPECT_TRUE(g.plan().empty());
  EXPECT_EQ(g.serving_replicas(), 2);
  // A replica that failed on the old spec is no reason to stop; it goes first, as it serves nothing.
  Fleet h(spec_with("a", 2), 2);
  h.at(1)->state = ReplicaState::Failed;
  h.spec = spec_with("b", 2);
  EXPECT_EQ(h.plan(), (std::vector<RolloutStep>{{Kind::Drain, 1}}));
}

TEST(Rollout, AnotherReplicaWaitsWhileTheReloadedOneIsStillLoading) {
  Fleet f(spec_with("a", 2), 2);
  f.spec = spec_with("b", 2);
  f.apply({Kind::Drain, 0});
  f.apply({Kind::Reload, 0, true});
  EXPECT_EQ(f.at(0)->state, ReplicaState::Matched);
  f.at(0)->state = ReplicaState::Downloading;
  EXPECT_TRUE(f.plan().empty());
  f.at(0)->state = ReplicaState::Ready;
  EXPECT_EQ(f.plan(), (std::vector<RolloutStep>{{Kind::Drain, 1}}));
}

TEST(Rollout, SparesReloadInPlaceAtOnceAndRowsWithoutADeviceJustTakeTheNewServing) {
  Fleet f(spec_with("a", 1, 2), 2);  // the second spare finds no device
  ASSERT_EQ(f.at(2)->state, ReplicaState::Unmatched);
  f.spec = spec_with("b", 1, 2);
  // No free device: replica 0 reloads in place, spare 1 drains, spare 2 has nothing loaded.
  EXPECT_EQ(f.plan(), (std::vector<RolloutStep>{{Kind::Drain, 1}, {Kind::Reload, 2, false}, {Kind::Drain, 0}}));
}

TEST(Rollout, ADeviceThatNoLongerQualifiesIsReplacedByOneThatDoes) {
  Fleet f(spec_with("a", 1), 1);
  f.devices.push_back(device("big", 64));
  f.spec.requirements.min_ram_bytes = 32 * kGiB;  // p0 has 16 GiB
  const auto ids = f.by_id();
  EXPECT_TRUE(outdated(*f.at(0), f.spec, ids.at("p0")));
  EXPECT_EQ(f.plan(), (std::vector<RolloutStep>{{Kind::AddSurge, 0}}));
  for (int i = 0; i < 4 && !f.done(); ++i) f.round();
  EXPECT_TRUE(f.done());
  EXPECT_EQ(f.at(0)->processor_id, "big");
}

TEST(Rollout, InPlaceAReplicaWhoseDeviceNoLongerQualifiesIsMatchedAnew) {
  Fleet f(spec_with("a", 1), 1);
  f.spec.requirements.min_ram_bytes = 32 * kGiB;
  f.apply({Kind::Drain, 0});
  EXPECT_EQ(f.plan(), (std::vector<RolloutStep>{{Kind::Reload, 0, false}}));
}

TEST(Rollout, SurgeRowsThatAreNotWantedAnyMoreDrain) {
  Fleet f(spec_with("a", 2), 4);
  f.spec = spec_with("b", 2);
  f.round();  // surges for 0 and 1
  ASSERT_NE(f.at(kSurgeIndexBase + 1), nullptr);
  // Changed again before they took over: both serve "b", the spec now asks for "c".
  f.spec = spec_with("c", 2);
  std::vector<RolloutStep> steps = f.plan();
  EXPECT_EQ(steps[0], (RolloutStep{Kind::DropSurge, kSurgeIndexBase + 0}));
  EXPECT_EQ(steps[1], (RolloutStep{Kind::DropSurge, kSurgeIndexBase + 1}));
  // Scaled down to one replica: replica 1's surge is not wanted either.
  Fleet g(spec_with("a", 2), 4);
  g.spec = spec_with("b", 2);
  g.round();
  g.spec.replicas = 1;
  g.spec.spares = 1;
  steps = g.plan();
  EXPECT_NE(std::find(steps.begin(), steps.end(), RolloutStep{Kind::DropSurge, kSurgeIndexBase + 1}), steps.end());
  EXPECT_NE(std::find(steps.begin(), steps.end(), RolloutStep{Kind::SwapIn, 0}), steps.end());
}

TEST(Rollout, ASurgeThatLostItsDeviceGivesWayToAnInPlaceReload) {
  Fleet f(spec_with("a", 1), 2);
  f.spec = spec_with("b", 1);
  f.round();  // surge matched to p1
  Replica* surge = f.at(kSurgeIndexBase);
  ASSERT_NE(surge, nullptr);
  surge->state = ReplicaState::Offline;  // p1 vanished
  f.devices[1].online = false;
  EXPECT_EQ(f.plan(), (std::vector<RolloutStep>{{Kind::DropSurge, kSurgeIndexBase}, {Kind::Drain, 0}}));
}

TEST(Rollout, ARowDrainedByHandIsLeftAlone) {
  Fleet f(spec_with("a", 2), 2);
  f.at(1)->draining = true;
  f.spec = spec_with("b", 2);
  EXPECT_EQ(f.plan(), (std::vector<RolloutStep>{{Kind::Drain, 0}}));
}

TEST(Rollout, TheSpecComingBackStopsAnInPlaceReload) {
  Fleet f(spec_with("a", 2), 2);
  f.spec = spec_with("b", 2);
  f.apply({Kind::Drain, 0});
  f.spec = spec_with("a", 2);
  EXPECT_EQ(f.plan(), (std::vector<RolloutStep>{{Kind::Reload, 0, true}}));
  f.round();
  EXPECT_FALSE(f.at(0)->reloading);
  EXPECT_EQ(f.at(0)->state, ReplicaState::Ready);
}

}  // namespace
}  // namespace cellserve::fleet
