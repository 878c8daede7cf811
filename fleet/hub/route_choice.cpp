#include "fleet/hub/route_choice.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace cellserve::fleet {

uint64_t fnv1a(std::string_view bytes, uint64_t seed) {
  uint64_t h = seed;
  for (const char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h;
}

double device_slowdown(const DeviceState& device) {
  double slowdown = 1;
  if (device.throttled()) slowdown /= std::max(*device.cpu_freq_ratio, 0.05);
  if (const auto t = device.temperature_c(); t && *t >= kHotCelsius) slowdown *= kHotSlowdown;
  return slowdown;
}

double alone_seconds(const ReplicaView& replica, const RequestWork& work) {
  const double prefill = replica.prefill_tps > 0 ? replica.prefill_tps : kUnknownPrefillTps;
  const double decode = replica.decode_tps > 0 ? replica.decode_tps : kUnknownDecodeTps;
  return (work.prompt_tokens / prefill + work.max_tokens / decode) * std::max(1.0, replica.slowdown);
}

namespace {

int slots_of(const ReplicaView& r) { return r.slots > 0 ? r.slots : 1; }
bool has_free_slot(const ReplicaView& r) { return r.busy < slots_of(r); }

// Requests of `work` per second the replica completes with every slot busy.
double capacity(const ReplicaView& r, const RequestWork& work) {
  return slots_of(r) / std::max(alone_seconds(r, work), 1e-9);
}

}  // namespace

double estimated_seconds(const ReplicaView& replica, const RequestWork& work) {
  const double shared = alone_seconds(replica, work) * (1.0 + static_cast<double>(replica.busy) / slots_of(replica));
  RequestWork ahead;  // the prompts the device is still reading, as one request's prefill
  ahead.prompt_tokens = replica.prefill.pending();
  ahead.max_tokens = 0;
  return shared + alone_seconds(replica, ahead);
}

bool over_share(const std::vector<ReplicaView>& candidates, size_t i, const RequestWork& work) {
  const ReplicaView& r = candidates[i];
  double total_capacity = 0;
  int total_busy = 1;  // this request
  for (const ReplicaView& c : candidates) {
    if (c.spare != r.spare) continue;
    total_capacity += capacity(c, work);
    total_busy += c.busy;
  }
  const double share = capacity(r, work) / total_capacity;
  const double bound = std::max(1.0, std::ceil(kShareSlack * share * total_busy));
  return r.busy + 1 > bound;
}

namespace {

// Rendezvous (highest random weight) hashing: the prefix's replica is the one whose combined
// hash is highest, so adding or losing a replica moves only the prefixes it wins or held.
uint64_t affinity_weight(uint64_t prefix_hash, const ReplicaView& r) {
  const std::string who = r.processor_id + "/" + std::to_string(r.index);
  return fnv1a(who, prefix_hash ^ 0x9e3779b97f4a7c15ull);
}

// An idle replica of the kind `spares` that is not yet measured, when another of that kind is (a
// measured replica would otherwise outrank the prior of a new one for ever at low load): the
// prefix's own replica for a request with a prefix (affinity keeps its cache), else the first.
std::optional<size_t> replica_to_measure(const std::vector<ReplicaView>& candidates, bool spares,
                                         std::optional<size_t> preferred) {
  const auto measured = [](const ReplicaView& r) { return r.measured.answers() >= kTrustedSamples; };
  if (std::none_of(candidates.begin(), candidates.end(),
                   [&](const ReplicaView& r) { return r.spare == spares && measured(r); })) {
    return std::nullopt;
  }
  const auto to_measure = [&](size_t i) {
    return candidates[i].spare == spares && !measured(candidates[i]) && candidates[i].busy == 0;
  };
  if (preferred) return to_measure(*preferred) ? preferred : std::nullopt;
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (to_measure(i)) return i;
  }
  return std::nullopt;
}

// The best replica of the kind `spares` with a free slot (and with `bounded`, within its share
// bound), or the prefix's replica when it is nearly as good; nullopt when none.
std::optional<size_t> choose_among(const std::vector<ReplicaView>& candidates, const RequestWork& work, bool spares,
                                   bool bounded) {
  const auto eligible = [&](size_t i) {
    return has_free_slot(candidates[i]) && (!bounded || !over_share(candidates, i, work));
  };
  std::optional<size_t> best;
  double best_s = std::numeric_limits<double>::infinity();
  std::optional<size_t> preferred;
  uint64_t preferred_weight = 0;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const ReplicaView& r = candidates[i];
    if (r.spare != spares) continue;
    if (work.prefix_hash) {
      // The prefix's replica among all of this kind, free or not: a busy one is not replaced
      // by another in the ranking, it is only passed over below.
      const uint64_t w = affinity_weight(*work.prefix_hash, r);
      if (!preferred || w > preferred_weight) {
        preferred = i;
        preferred_weight = w;
      }
    }
    if (!eligible(i)) continue;
    const double s = estimated_seconds(r, work);
    // Ties (equal devices, equally loaded) go to the lower index, so routing is deterministic.
    if (s < best_s) {
      best = i;
      best_s = s;
    }
  }
  if (const std::optional<size_t> probe = replica_to_measure(candidates, spares, preferred);
      probe && eligible(*probe)) {
    return probe;
  }
  if (best && preferred && eligible(*preferred) &&
      estimated_seconds(candidates[*preferred], work) <= best_s * kAffinityTolerance) {
    return preferred;
  }
  return best;
}

}  // namespace

std::optional<size_t> choose_replica(const std::vector<ReplicaView>& candidates, const RequestWork& work) {
  for (const bool spares : {false, true}) {
    for (const bool bounded : {true, false}) {
      if (const std::optional<size_t> pick = choose_among(candidates, work, spares, bounded)) return pick;
    }
  }
  return std::nullopt;
}

}  // namespace cellserve::fleet
