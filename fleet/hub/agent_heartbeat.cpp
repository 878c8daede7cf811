// Each agent's heartbeat, on the agent link's own thread: push the assignments the reconcile
// loop chose for it, then poll its replicas' states into the store and the registry. Network
// calls happen outside state_mu, so a stuck agent holds up only its own heartbeat.
#include <boost/json.hpp>

#include "fleet/hub/route_choice.h"
#include "fleet/hub/supervisor.h"
#include "fleet/spec/agent_protocol.h"
#include "fleet/spec/device_state.h"

namespace cellserve::fleet {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

// The row serves `rep` on `processor`: its device, not offline, and the model the row serves now
// (a report about the model served before a rolling update reloaded it in place is not).
bool row_serves_report(const Replica& row, const ReplicaReport& rep, const std::string& processor) {
  return row.processor_id == processor && row.state != ReplicaState::Offline &&
         (rep.model_sha256.empty() || rep.model_sha256 == row.serving.model_sha256);
}

bool same_as_reported(const Replica& row, const ReplicaReport& rep, int64_t acked) {
  return row.state == rep.state && row.progress == rep.progress && row.detail == rep.detail &&
         row.decode_tps == rep.decode_tps && row.secrets_version == acked;
}

// Whether `rep` would change `row` (poll_agent's rules): not for a row it does not serve, nor for a
// failure already recorded, nor when it says what the row says.
bool report_changes_row(const Replica& row, const ReplicaReport& rep, const std::string& processor, int64_t acked,
                        const RefusedHomes& refused) {
  if (!row_serves_report(row, rep, processor)) return false;
  const bool refused_here = refused.contains({row.deployment, processor});
  if (rep.state == ReplicaState::Failed && rep.gave_up && !refused_here) return true;
  if (row.state == ReplicaState::Failed && rep.state == ReplicaState::Failed && refused_here) return false;
  return !same_as_reported(row, rep, acked);
}

}  // namespace

int64_t Supervisor::acked_version(const std::string& processor, const Replica& row, const ReplicaReport& rep) const {
  // The version counts only when the device proved it opened what was sealed to it: the proof
  // needs the key inside the box.
  const auto sent = sealed_secrets_.find({processor, row.deployment});
  return sent != sealed_secrets_.end() && !sent->second.proof.empty() &&
                 net::constant_time_equal(sent->second.proof, rep.secrets_proof) &&
                 sent->second.version == rep.secrets_version
             ? rep.secrets_version
             : 0;
}

void Supervisor::heartbeat(AgentLink& link) {
  if (link.tunnel->closed()) return;
  push_assignments(link);
  poll_agent(link);
}

void Supervisor::push_assignments(AgentLink& link) {
  const std::optional<std::string> body = link.assignments_to_push();
  if (!body) return;
  auto reply =
      link.tunnel->call("PUT", std::string(kAgentAssignmentsPath), *body, 10s, {{"content-type", "application/json"}});
  if (reply.ok() && reply->status == 200) {
    link.assignments_pushed(*body);
  } else {
    state_.log("agent " + link.processor_id.substr(0, 16) + " refused its assignments: " +
               (reply.ok() ? std::to_string(reply->status) + " " + reply->body : reply.status().message()));
  }
}

void Supervisor::poll_agent(AgentLink& link) {
  auto reply = link.tunnel->call("GET", std::string(kAgentStatusPath), "", 5s);
  if (!reply.ok() || reply->status != 200) {
    if (++link.failed_polls == 1) {
      state_.log("agent " + link.processor_id.substr(0, 16) + " missed a heartbeat (" +
                 (reply.ok() ? "status " + std::to_string(reply->status) : reply.status().message()) +
                 "); its replicas take no new requests until it answers");
    }
    return;
  }
  if (link.failed_polls > 0) state_.log("agent " + link.processor_id.substr(0, 16) + " answers its heartbeat again");
  link.failed_polls = 0;
  link.answered();
  auto v = parse_json(reply->body, "agent status");
  if (!v.ok()) return;
  auto reports = replica_reports_from_json(*v);
  if (!reports.ok()) {
    state_.log("agent " + link.processor_id.substr(0, 16) + ": " + reports.status().message());
    return;
  }
  // The device's battery, heat and memory ({} from an agent that reports none).
  DeviceState device;
  if (const json::value* d = v->as_object().if_contains("device"); d != nullptr) {
    auto parsed = device_state_from_json(*d);
    if (parsed.ok()) {
      device = std::move(parsed).value();
    } else {
      state_.log("agent " + link.processor_id.substr(0, 16) + ": " + parsed.status().message());
    }
  }
  state_.registry.report_device(link.processor_id, device_slowdown(device), !device.paused.empty());
  const int64_t now = state_.now_ms();
  bool changed = false;  // a state changed: the plan may change
  {
    std::lock_guard lock(state_.state_mu);
    state_.polled.insert(link.processor_id);  // online and last seen now: written by the next round
    DeviceState& known = state_.device_states[link.processor_id];
    if (known.paused != device.paused) {
      state_.log("agent " + link.processor_id.substr(0, 16) +
                 (device.paused.empty() ? std::string(" takes requests again") : " paused: " + device.paused));
    }
    known = device;
    // Each poll replaces the settings this device reported before (for the rows it serves only).
    std::erase_if(state_.tuned_settings, [&](const auto& e) { return e.second.processor_id == link.processor_id; });
    // What every report on a row its device serves updates, whether the row changes or not: the
    // settings the device tuned, and a ready replica's count of failed homes.
    auto note_report = [&](const Replica& row, const ReplicaReport& rep) {
      if (rep.tuned) state_.tuned_settings[{row.deployment, row.index}] = {link.processor_id, *rep.tuned};
      if (rep.state == ReplicaState::Ready) state_.failed_homes.erase({row.deployment, row.index});
    };
    for (const ReplicaReport& rep : *reports) {
      // The usual poll: nothing changed since this hub last read or wrote the row. Its store
      // row is neither read nor written; a change another hub made since is seen at the next
      // refresh, within a round, and compared then.
      if (const Replica* row = state_.known_row(rep.deployment, rep.index);
          row != nullptr && !report_changes_row(*row, rep, link.processor_id,
                                                acked_version(link.processor_id, *row, rep), state_.refused_homes)) {
        if (row_serves_report(*row, rep, link.processor_id)) note_report(*row, rep);
        continue;
      }
      auto rows = state_.store->replicas(rep.deployment);
      if (!rows.ok()) continue;
      bool rows_changed = false;  // a row of `rows` was written
      for (Replica& r : *rows) {
        if (r.index != rep.index || !row_serves_report(r, rep, link.processor_id)) continue;
        note_report(r, rep);  // a ready report is never the failure below
        if (rep.state == ReplicaState::Failed && rep.gave_up &&
            state_.refused_homes.insert({r.deployment, r.processor_id}).second) {
          // The device stopped trying (a model it cannot load, a file it cannot get): the replica
          // moves to another device, a bounded number of times.
          const int tried = ++state_.failed_homes[{r.deployment, r.index}];
          const std::string where = "replica " + r.deployment + "/" + std::to_string(r.index);
          if (tried < kMaxHomesPerReplica) {
            state_.log(where + ": failed for good on " + r.processor_id.substr(0, 16) + " (" + rep.detail +
                       "); moving it to another device");
            r.detail = "failed on " + std::to_string(tried) + " device" + (tried == 1 ? "" : "s") +
                       ", last: " + rep.detail + "; looking for another device";
            r.processor_id.clear();
            r.secrets_version = 0;
            r.state = ReplicaState::Unmatched;
            r.progress = 0;
            r.prefill_tps = r.decode_tps = 0;
            state_.saved(state_.store->update_replica(r, now), replica_context(r));
            rows_changed = changed = true;
            continue;
          }
          state_.log(where + ": failed for good on " + std::to_string(tried) + " devices; it stays failed");
          r.detail = rep.detail + " (failed on " + std::to_string(tried) + " devices; not moved again)";
          r.state = rep.state;
          state_.saved(state_.store->update_replica(r, now), replica_context(r));
          rows_changed = changed = true;
          continue;
        }
        if (r.state == ReplicaState::Failed && rep.state == ReplicaState::Failed &&
            state_.refused_homes.contains({r.deployment, r.processor_id})) {
          continue;  // the device gave up and the verdict above was recorded: keep it
        }
        const int64_t acked = acked_version(link.processor_id, r, rep);
        if (same_as_reported(r, rep, acked)) continue;
        if (r.secrets_version != acked && acked > 0) {
          state_.log("replica " + r.deployment + "/" + std::to_string(r.index) +
                     ": its device opened secrets version " + std::to_string(acked));
        }
        if (r.state != rep.state) {
          state_.log("replica " + r.deployment + "/" + std::to_string(r.index) + ": " + replica_state_name(r.state) +
                     " → " + replica_state_name(rep.state) + (rep.detail.empty() ? "" : " (" + rep.detail + ")"));
          changed = true;
        }
        r.state = rep.state;
        r.progress = rep.progress;
        r.detail = rep.detail;
        r.prefill_tps = rep.prefill_tps;
        r.decode_tps = rep.decode_tps;
        r.secrets_version = acked;
        state_.saved(state_.store->update_replica(r, now), replica_context(r));
        rows_changed = true;
      }
      // What was read and written is newer than what the hub knew: routing follows it now.
      if (rows_changed) state_.remember_rows(rep.deployment, *rows);
    }
  }
  // Outside state_mu: the registry has its own lock, and load reports change no store row.
  for (const ReplicaReport& rep : *reports) {
    state_.registry.report_load(rep.deployment, rep.index, link.processor_id, rep.slots, rep.free_slots,
                                {rep.prefill_done, rep.prefill_total});
  }
  if (changed) state_.request_reconcile();  // a replica that failed or went ready may change the plan
}

}  // namespace cellserve::fleet
