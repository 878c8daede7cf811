// The rolling update: when a deployment's spec changes what its replicas load (model, engine) or
// which devices may serve it (requirements), the rows still serving the old spec are replaced
// without dropping a request. Pure planning over the store's records; the hub applies the steps
// (fleet/hub/reconcile.cpp) once per reconcile round, so a rollout advances round by round.
//
// A replica row is replaced by surging while free eligible devices exist: a new row at
// kSurgeIndexBase + index loads the new spec on a free device, and once it is ready it takes the
// replica's index (and address); the old row moves to the surge index, draining, and is removed
// once its requests have finished. With no free device, no surge under way and no replaced row
// still draining (its device is about to be free), one replica row per deployment at a time is
// reloaded in place: drained, then once idle given the new serving (its
// device reloads, or the row is matched anew when the device no longer qualifies). Spares carry
// no traffic of their own and are always reloaded in place. A new spec that fails to load stops
// the rollout where it is: a failed surge row never takes an address, and after a failed in-place
// reload no other replica is drained, so the old rows keep serving.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "fleet/matcher/matcher.h"
#include "fleet/store/records.h"

namespace cellserve::fleet {

struct RolloutStep {
  enum class Kind {
    AddSurge,   // add row kSurgeIndexBase + index, Unmatched, serving the spec
    SwapIn,     // the ready surge row of `index` takes it; the old row moves to the surge index, draining
    DropSurge,  // surge row `index` (>= kSurgeIndexBase) is not wanted any more: drain it
    Drain,      // row `index` stops taking requests before an in-place reload (reloading = true)
    Reload,     // row `index` gets the spec's serving; keep_device false: its device no longer qualifies
  };
  Kind kind = Kind::AddSurge;
  int index = 0;
  bool keep_device = true;  // Reload only
  bool operator==(const RolloutStep&) const = default;
};

// Whether row `r` of the deployment with `spec` must be replaced: it serves another model or
// engine, or `device` (its processor; null when unknown) no longer meets the requirements.
bool outdated(const Replica& r, const DeploymentSpec& spec, const Processor* device);

// Online processors that are serving nothing and could serve `spec` (as plan_matches would
// offer them: meets, runs_engine, price, not refused), given every deployment's `rows`.
int free_devices(const std::vector<Processor>& processors, const std::vector<Replica>& rows, const DeploymentSpec& spec,
                 const RefusedHomes& refused);

// The next steps of the rollout of the deployment with `spec`. `rows`: its replica rows;
// `in_flight`: requests the hub is forwarding to each index now (absent: none); `devices`: its
// rows' processors by id; `free`: free_devices() for it. Empty when nothing is outdated.
std::vector<RolloutStep> plan_rollout(const DeploymentSpec& spec, const std::vector<Replica>& rows,
                                      const std::map<int, int>& in_flight,
                                      const std::map<std::string, const Processor*>& devices, int free);

}  // namespace cellserve::fleet
