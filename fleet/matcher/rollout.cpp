#include "fleet/matcher/rollout.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace cellserve::fleet {
namespace {

// The row has no device serving it now: nothing is loaded, nothing to drain.
bool without_device(const Replica& r) {
  return r.processor_id.empty() || r.state == ReplicaState::Unmatched || r.state == ReplicaState::Offline;
}

bool loading(const Replica& r) {
  return r.state == ReplicaState::Matched || r.state == ReplicaState::Downloading || r.state == ReplicaState::Loading ||
         r.state == ReplicaState::Tuning;
}

}  // namespace

bool outdated(const Replica& r, const DeploymentSpec& spec, const Processor* device) {
  if (!(r.serving == serving_of(spec))) return true;
  return device != nullptr && !without_device(r) &&
         (!meets(*device, spec.requirements) || !runs_engine(*device, spec.engine));
}

int free_devices(const std::vector<Processor>& processors, const std::vector<Replica>& rows, const DeploymentSpec& spec,
                 const RefusedHomes& refused) {
  std::set<std::string> busy;
  for (const Replica& r : rows) {
    if (!r.processor_id.empty() && r.state != ReplicaState::Offline) busy.insert(r.processor_id);
  }
  int n = 0;
  for (const Processor& p : processors) {
    if (!p.online || !std::isfinite(p.price_per_day) || busy.contains(p.id) ||
        p.price_per_day > spec.max_price_per_day || refused.contains({spec.name, p.id}) ||
        !meets(p, spec.requirements) || !runs_engine(p, spec.engine)) {
      continue;
    }
    ++n;
  }
  return n;
}

std::vector<RolloutStep> plan_rollout(const DeploymentSpec& spec, const std::vector<Replica>& rows,
                                      const std::map<int, int>& in_flight,
                                      const std::map<std::string, const Processor*>& devices, int free) {
  using Kind = RolloutStep::Kind;
  const int total = spec.replicas + spec.spares;
  std::vector<const Replica*> sorted;
  std::map<int, const Replica*> by_index;
  for (const Replica& r : rows) {
    sorted.push_back(&r);
    by_index[r.index] = &r;
  }
  std::sort(sorted.begin(), sorted.end(), [](const Replica* a, const Replica* b) { return a->index < b->index; });
  auto device_of = [&](const Replica& r) -> const Processor* {
    const auto it = devices.find(r.processor_id);
    return it == devices.end() ? nullptr : it->second;
  };
  auto is_outdated = [&](const Replica& r) { return outdated(r, spec, device_of(r)); };
  auto keeps_device = [&](const Replica& r) {
    const Processor* p = device_of(r);
    return !without_device(r) && (p == nullptr || (meets(*p, spec.requirements) && runs_engine(*p, spec.engine)));
  };
  auto idle = [&](int index) {
    const auto it = in_flight.find(index);
    return it == in_flight.end() || it->second <= 0;
  };

  // The deployment's own rows that wait for a device take the free ones first (the matcher
  // fills replicas and spares before surge rows).
  for (const Replica* r : sorted) {
    if (r->index < total && !r->draining && without_device(*r)) --free;
  }

  std::vector<RolloutStep> steps;
  std::set<int> surging;  // replica indices whose surge row stays
  // A row draining at a surge index (a replaced replica, a dropped surge) frees its device once
  // idle: the rollout surges onto that device rather than reloading a replica in place.
  bool device_coming_free = false;
  for (const Replica* r : sorted) {
    if (r->index >= kSurgeIndexBase && r->draining && !without_device(*r)) device_coming_free = true;
    if (r->index < kSurgeIndexBase || r->draining) continue;
    const int index = r->index - kSurgeIndexBase;
    const auto old = by_index.find(index);
    const bool wanted = index < spec.replicas && old != by_index.end() && !old->second->draining &&
                        !old->second->reloading && is_outdated(*old->second) && !is_outdated(*r);
    if (!wanted) {
      steps.push_back({Kind::DropSurge, r->index});
      continue;
    }
    if (r->state == ReplicaState::Ready) {
      steps.push_back({Kind::SwapIn, index});
    } else if (without_device(*r)) {
      // Waiting for a device: it gets one of the free ones this round, or, with none left, gives
      // way to an in-place reload.
      if (free <= 0) {
        steps.push_back({Kind::DropSurge, r->index});
        continue;
      }
      --free;
    }
    surging.insert(index);
  }

  // A replica row being drained or reloaded in place, or one loading the new spec: the next
  // in-place reload waits for it, so at most one replica is out of service for the rollout.
  bool replica_in_place = false;
  // A row on the new spec failed (a model or engine setting its device cannot load): no further
  // replica is taken out of service for it; the old rows keep serving until the spec is fixed.
  bool new_spec_failed = false;
  std::vector<int> waiting;  // outdated replica rows with no free device to surge onto
  for (const Replica* r : sorted) {
    if (r->index >= total || r->draining) continue;  // surge rows, rows past the count, drained by hand
    const bool old = is_outdated(*r);
    if (r->index < spec.replicas && !old && !without_device(*r) && loading(*r)) replica_in_place = true;
    if (!old && !without_device(*r) && r->state == ReplicaState::Failed) new_spec_failed = true;
    if (r->reloading) {
      if (!old) {
        steps.push_back({Kind::Reload, r->index, true});  // the spec came back to what it serves
        continue;
      }
      if (r->index < spec.replicas) replica_in_place = true;
      if (idle(r->index)) steps.push_back({Kind::Reload, r->index, keeps_device(*r)});
      continue;
    }
    if (!old) continue;
    if (without_device(*r)) {
      steps.push_back({Kind::Reload, r->index, false});
    } else if (r->index >= spec.replicas) {
      steps.push_back({Kind::Drain, r->index});
    } else if (surging.contains(r->index)) {
      continue;
    } else if (free > 0) {
      steps.push_back({Kind::AddSurge, r->index});
      surging.insert(r->index);
      --free;
    } else {
      waiting.push_back(r->index);
    }
  }
  for (const Replica* r : sorted) {
    if (r->index >= kSurgeIndexBase && !r->draining && !is_outdated(*r) && r->state == ReplicaState::Failed) {
      new_spec_failed = true;
    }
  }
  if (!waiting.empty() && surging.empty() && !replica_in_place && !device_coming_free && !new_spec_failed) {
    // One that serves nothing now (failed, still loading the old spec) first: it costs no capacity.
    int pick = waiting.front();
    for (const int index : waiting) {
      if (by_index.at(index)->state != ReplicaState::Ready) {
        pick = index;
        break;
      }
    }
    steps.push_back({Kind::Drain, pick});
  }
  return steps;
}

}  // namespace cellserve::fleet
