// The matcher: which processor should serve which replica, and what the market looks like.
// Pure functions over the Store's records (records.h): no I/O, no clock, deterministic output.
// Thread-safe (no shared state).
#pragma once

#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "fleet/store/records.h"

namespace cellserve::fleet {

// Returns whether `p` satisfies `r` (RAM, cores, arch, decode speed, attestation, allow list).
// Ignores price and online state. When it returns false and `why` is non-null, stores the first
// unmet requirement in *why, e.g. "ram 8.0 GiB < 12.0 GiB".
bool meets(const Processor& p, const Requirements& r, std::string* why = nullptr);

// Returns whether `p`'s live device state (p.device, its last status poll) satisfies the
// requirements that follow it: charging_only, min_battery, max_temperature_c. charging_only
// needs a device known to be plugged in (a mains-powered box shows its "Mains" supply); a battery
// level or a temperature the device hides does not hold against it. Checked when a replica is placed, not afterwards: a
// battery or a temperature that moves past a bound does not move a loaded replica (the agent
// pauses on a low battery, and the gateway sends a hot device less work instead).
// The reason goes to *why as in meets(), e.g. "battery 15% < 30%".
bool meets_now(const Processor& p, const Requirements& r, std::string* why = nullptr);

// Returns whether `p` can run a deployment with engine settings `e`: a simulated processor
// (`agent --simulate`) serves only simulated deployments ([engine] simulated = true), and a real
// one only real deployments. The reason goes to *why as in meets().
bool runs_engine(const Processor& p, const EngineSettings& e, std::string* why = nullptr);

// Replica row (deployment, index) should be served by `processor_id` at `price_per_day`.
struct Assignment {
  std::string deployment;
  int index = 0;
  std::string processor_id;
  double price_per_day = 0;
};

// A Ready spare takes over a replica whose processor is gone: the hub swaps the processor
// assignments of rows `replica_index` and `spare_index` so the replica keeps its address; the
// spare row is then the one to re-match.
struct Promotion {
  std::string deployment;
  int replica_index = 0;
  int spare_index = 0;
};

struct MatchPlan {
  std::vector<Assignment> assignments;  // in deployment created order, then index
  std::vector<Promotion> promotions;    // likewise
};

// Plans promotions and fills Unmatched and Offline replica rows with eligible processors.
// Rules:
// - A processor is busy when some replica row with state other than Offline names it; a busy
//   processor serves nothing else (any deployment). Offline and non-online processors are skipped.
// - Eligible: enrolled, online, not busy, meets(requirements) (which includes the allow list,
//   matched by id or by the label the operator fixed at approval, never the device's own name), runs_engine(engine)
//   (simulated only with simulated), price_per_day <= max_price_per_day.
// - Deployments in created order (then name); per deployment, promotions first: each replica row
//   (index < replicas) that is Unmatched or Offline takes a Ready spare (lowest spare index);
//   then rows to fill (Unmatched or Offline, after promotions; replicas before spares, by
//   index) each take the cheapest eligible processor, ties broken by higher benchmark
//   decode_tps, then lower id.
// Assignments already account for promotions: after a promotion the spare row is the one that
// appears in `assignments` (when a processor is available for it).
// `refused`: (deployment, processor id) pairs never to match, processors on which the deployment
// failed for good (the hub moves such a replica elsewhere).
using RefusedHomes = std::set<std::pair<std::string, std::string>>;
MatchPlan plan_matches(const std::vector<Processor>& processors, const std::vector<Deployment>& deployments,
                       const std::vector<Replica>& replicas, const RefusedHomes& refused = {});

// The asks of the processors free to take a new row of `d` now, as plan_matches() would offer
// them (online, enrolled, not busy, within its price and requirements, not refused), cheapest
// first: what an autoscaler may grow onto.
std::vector<double> free_asks(const std::vector<Processor>& processors, const Deployment& d,
                              const std::vector<Replica>& replicas, const RefusedHomes& refused = {});

struct MarketQuery {
  Requirements requirements;
  int replicas = 1;
  bool simulated = false;  // count simulated processors instead of real ones (runs_engine)
};

struct MarketFigures {
  int eligible = 0;        // processors meeting the requirements (online or not)
  int available = 0;       // eligible, online and not busy
  double average_ask = 0;  // mean price_per_day over eligible online processors; 0 when none
  // The lowest max_price_per_day at which `replicas` replicas would match now: the replicas-th
  // cheapest ask among available processors; nullopt when fewer are available.
  std::optional<double> price_for_replicas;
};

// Returns the market for `q` given the processors and the replica rows (for busy processors).
MarketFigures market(const std::vector<Processor>& processors, const std::vector<Replica>& replicas,
                     const MarketQuery& q);

}  // namespace cellserve::fleet
