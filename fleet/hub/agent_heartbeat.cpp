// Each agent's heartbeat, on the agent link's own thread: push the assignments the reconcile
// loop chose for it, then poll its replicas' states into the store and the registry. Network
// calls happen outside state_mu, so a stuck agent holds up only its own heartbeat.
#include <boost/json.hpp>

#include "fleet/hub/hub_impl.h"
#include "fleet/hub/route_choice.h"
#include "fleet/spec/agent_protocol.h"
#include "fleet/spec/device_state.h"

namespace cellserve::fleet {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

}  // namespace

void Hub::Impl::heartbeat(AgentLink& link) {
  if (link.tunnel->closed()) return;
  push_assignments(link);
  poll_agent(link);
}

void Hub::Impl::push_assignments(AgentLink& link) {
  const std::optional<std::string> body = link.assignments_to_push();
  if (!body) return;
  auto reply =
      link.tunnel->call("PUT", std::string(kAgentAssignmentsPath), *body, 10s, {{"content-type", "application/json"}});
  if (reply.ok() && reply->status == 200) {
    link.assignments_pushed(*body);
  } else {
    log("agent " + link.processor_id.substr(0, 16) + " refused its assignments: " +
        (reply.ok() ? std::to_string(reply->status) + " " + reply->body : reply.status().message()));
  }
}

void Hub::Impl::poll_agent(AgentLink& link) {
  auto reply = link.tunnel->call("GET", std::string(kAgentStatusPath), "", 5s);
  if (!reply.ok() || reply->status != 200) {
    if (++link.failed_polls == 1) {
      log("agent " + link.processor_id.substr(0, 16) + " missed a heartbeat (" +
          (reply.ok() ? "status " + std::to_string(reply->status) : reply.status().message()) +
          "); its replicas take no new requests until it answers");
    }
    return;
  }
  if (link.failed_polls > 0) log("agent " + link.processor_id.substr(0, 16) + " answers its heartbeat again");
  link.failed_polls = 0;
  link.answered();
  auto v = parse_json(reply->body, "agent status");
  if (!v.ok()) return;
  auto reports = replica_reports_from_json(*v);
  if (!reports.ok()) {
    log("agent " + link.processor_id.substr(0, 16) + ": " + reports.status().message());
    return;
  }
  // The device's battery, heat and memory ({} from an agent that reports none).
  DeviceState device;
  if (const json::value* d = v->as_object().if_contains("device"); d != nullptr) {
    auto parsed = device_state_from_json(*d);
    if (parsed.ok()) {
      device = std::move(parsed).value();
    } else {
      log("agent " + link.processor_id.substr(0, 16) + ": " + parsed.status().message());
    }
  }
  registry.report_device(link.processor_id, device_slowdown(device), !device.paused.empty());
  const int64_t now = now_ms();
  bool changed = false;  // a state changed: the plan may change
  bool updated = false;  // a row changed: the registry must follow
  {
    std::lock_guard lock(state_mu);
    (void)store->set_processor_online(link.processor_id, true, now);
    DeviceState& known = device_states[link.processor_id];
    if (known.paused != device.paused) {
      log("agent " + link.processor_id.substr(0, 16) +
          (device.paused.empty() ? std::string(" takes requests again") : " paused: " + device.paused));
    }
    known = device;
    for (const ReplicaReport& rep : *reports) {
      auto rows = store->replicas(rep.deployment);
      if (!rows.ok()) continue;
      for (Replica r : *rows) {
        if (r.index != rep.index || r.processor_id != link.processor_id || r.state == ReplicaState::Offline) continue;
        // A report about the model this row served before a rolling update reloaded it in place.
        if (!rep.model_sha256.empty() && rep.model_sha256 != r.serving.model_sha256) continue;
        if (rep.state == ReplicaState::Failed && rep.gave_up &&
            refused_homes.insert({r.deployment, r.processor_id}).second) {
          // The device stopped trying (a model it cannot load, a file it cannot get): the replica
          // moves to another device, a bounded number of times.
          const int tried = ++failed_homes[{r.deployment, r.index}];
          const std::string where = "replica " + r.deployment + "/" + std::to_string(r.index);
          if (tried < kMaxHomesPerReplica) {
            log(where + ": failed for good on " + r.processor_id.substr(0, 16) + " (" + rep.detail +
                "); moving it to another device");
            r.detail = "failed on " + std::to_string(tried) + " device" + (tried == 1 ? "" : "s") +
                       ", last: " + rep.detail + "; looking for another device";
            r.processor_id.clear();
            r.secrets_version = 0;
            r.state = ReplicaState::Unmatched;
            r.progress = 0;
            r.prefill_tps = r.decode_tps = 0;
            (void)store->update_replica(r, now);
            updated = changed = true;
            continue;
          }
          log(where + ": failed for good on " + std::to_string(tried) + " devices; it stays failed");
          r.detail = rep.detail + " (failed on " + std::to_string(tried) + " devices; not moved again)";
          r.state = rep.state;
          (void)store->update_replica(r, now);
          updated = changed = true;
          continue;
        }
        if (rep.state == ReplicaState::Ready) failed_homes.erase({r.deployment, r.index});
        if (r.state == ReplicaState::Failed && rep.state == ReplicaState::Failed &&
            refused_homes.contains({r.deployment, r.processor_id})) {
          continue;  // the device gave up and the verdict above was recorded: keep it
        }
        // The version counts only when the device proved it opened what was sealed to it: the
        // proof needs the key inside the box.
        const auto sent = sealed_secrets.find({link.processor_id, r.deployment});
        const int64_t acked = sent != sealed_secrets.end() && !sent->second.proof.empty() &&
                                      net::constant_time_equal(sent->second.proof, rep.secrets_proof) &&
                                      sent->second.version == rep.secrets_version
                                  ? rep.secrets_version
                                  : 0;
        if (r.state == rep.state && r.progress == rep.progress && r.detail == rep.detail &&
            r.decode_tps == rep.decode_tps && r.secrets_version == acked) {
          continue;
        }
        if (r.secrets_version != acked && acked > 0) {
          log("replica " + r.deployment + "/" + std::to_string(r.index) + ": its device opened secrets version " +
              std::to_string(acked));
        }
        if (r.state != rep.state) {
          log("replica " + r.deployment + "/" + std::to_string(r.index) + ": " + replica_state_name(r.state) + " → " +
              replica_state_name(rep.state) + (rep.detail.empty() ? "" : " (" + rep.detail + ")"));
          changed = true;
        }
        r.state = rep.state;
        r.progress = rep.progress;
        r.detail = rep.detail;
        r.prefill_tps = rep.prefill_tps;
        r.decode_tps = rep.decode_tps;
        r.secrets_version = acked;
        (void)store->update_replica(r, now);
        updated = true;
      }
    }
    if (updated) refresh_registry();
  }
  // Outside state_mu: the registry has its own lock, and load reports change no store row.
  for (const ReplicaReport& rep : *reports) {
    registry.report_load(rep.deployment, rep.index, link.processor_id, rep.slots, rep.free_slots);
  }
  if (changed) request_reconcile();  // a replica that failed or went ready may change the plan
}

}  // namespace cellserve::fleet
