// Which replica a request to a deployment's endpoint goes to: the one whose estimated completion
// time is lowest, from the hub's own exact in-flight counts, the agents' slot reports, each
// device's measured speeds and the request's own size; with affinity for the replica that holds
// the request's prompt prefix in its cache, unless that replica is clearly busier. Pure
// functions of their inputs, so routing is tested without a fleet. docs/fleet.md ("Routing").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fleet/hub/replica_registry.h"

namespace cellserve::fleet {

// What the hub knows of a request before sending it: sizes estimated from its body.
struct RequestWork {
  double prompt_tokens = 0;  // estimated from the prompt's bytes (kBytesPerToken)
  double max_tokens = 0;     // the request's max_tokens, else kDefaultMaxTokens
  // FNV-1a of the prompt's first kAffinityPrefixBytes, set only for prompts at least that long:
  // requests that share it (one system prompt and case header) share a cached prefix.
  std::optional<uint64_t> prefix_hash;
};

inline constexpr double kBytesPerToken = 4;       // English-like text under BPE tokenizers
inline constexpr double kDefaultMaxTokens = 256;  // an answer's size when the request does not bound it
inline constexpr size_t kAffinityPrefixBytes = 1024;
// Speeds assumed for a replica with none known (the registry gives every replica the prior of
// replica_speed.h until the hub has measured it): equal for all.
inline constexpr double kUnknownPrefillTps = kPriorPrefillTps;
inline constexpr double kUnknownDecodeTps = kPriorDecodeTps;
// The prefix's preferred replica keeps the request while its estimate is within this factor of
// the best one's; beyond it, the request goes to the best (bounded-load affinity).
inline constexpr double kAffinityTolerance = 1.5;

// How much slower than its measured speeds a device runs now: 1 / its CPU frequency ratio when
// throttled (the governor capped its clocks), times kHotSlowdown at kHotCelsius or more (it is
// about to be throttled, and more work makes it hotter). 1 when nothing is known.
inline constexpr double kHotCelsius = 45;
inline constexpr double kHotSlowdown = 2;
double device_slowdown(const DeviceState& device);

// The seconds `replica` would need for `work` alone: its prefill and decode time at its (routed)
// speeds, divided by its device's slowdown.
double alone_seconds(const ReplicaView& replica, const RequestWork& work);

// The seconds `replica` is estimated to need for `work`: its own prefill and decode time,
// divided by its device's slowdown and stretched by the share of its slots already busy (its
// compute is shared with them), plus the prompt tokens its device is still reading for others
// (ReplicaView::prefill): a device in the middle of a long prefill is not idle.
double estimated_seconds(const ReplicaView& replica, const RequestWork& work);

// The share bound: while another replica of its kind has room within its own bound, a replica
// holds at most kShareSlack times its share of the requests in flight to them (this one
// counted), rounded up and at least one; its share is its part of their summed capacity
// (slots / alone_seconds for the request). Routing already ranks by measured speed; the bound
// caps what any error in those figures can draw to one device.
inline constexpr double kShareSlack = 2;
bool over_share(const std::vector<ReplicaView>& candidates, size_t i, const RequestWork& work);

// The replica to send `work` to, as an index into `candidates` (which the caller has filtered to
// ready, reachable, non-ejected replicas); nullopt when none has a free slot. Replicas before
// spares: a spare is chosen only when no replica has a free slot. A replica the hub has not yet
// measured kTrustedSamples answers of takes the request when it is idle and another of its kind
// is measured (one at a time: a new device is measured even at low load, at the cost of a few
// requests; a request with a prefix only when it is the prefix's replica). Then the lowest estimate, replicas within
// their share bound before those over it.
std::optional<size_t> choose_replica(const std::vector<ReplicaView>& candidates, const RequestWork& work);

// FNV-1a, 64 bits: stable across runs and machines (tests, logs).
uint64_t fnv1a(std::string_view bytes, uint64_t seed = 1469598103934665603ull);

}  // namespace cellserve::fleet
