// The hub's in-memory view of every deployment's replicas: state, processor, measured speeds
// and the requests in flight to each. Kept in step with the store (refresh() after every change
// the hub makes), so that the request path reads no database. Thread-safe.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "fleet/store/records.h"

namespace cellserve::fleet {

struct ReplicaView {
  std::string deployment;
  int index = 0;
  bool spare = false;
  ReplicaState state = ReplicaState::Unmatched;
  double progress = 0;
  std::string processor_id;
  double prefill_tps = 0;
  double decode_tps = 0;
  int in_flight = 0;  // requests the hub is forwarding to it now (exact, counted here)
};

class ReplicaRegistry {
 public:
  // Replaces the view with the store's deployments and replica rows. In-flight counts carry
  // over for the (deployment, index) pairs that still exist.
  void refresh(const std::vector<Deployment>& deployments, const std::vector<Replica>& rows);

  // What the request path needs to reach replica `index` of `deployment`.
  struct Lookup {
    enum class Kind { NoDeployment, NoSuchReplica, Found } kind = Kind::NoDeployment;
    int replicas = 0;     // the deployment's replica count (NoSuchReplica's message)
    ReplicaView replica;  // Found
  };
  Lookup find(const std::string& deployment, int index) const;

  // Every replica and spare of `deployment` ("" : all), ordered by deployment then index.
  std::vector<ReplicaView> replicas(const std::string& deployment) const;

  // Counts one forwarded request to (deployment, index) while alive.
  class InFlight {
   public:
    InFlight() = default;
    explicit InFlight(std::shared_ptr<std::atomic<int>> counter) : counter_(std::move(counter)) { ++*counter_; }
    InFlight(InFlight&&) = default;
    InFlight& operator=(InFlight&&) = default;
    ~InFlight() {
      if (counter_) --*counter_;
    }

   private:
    std::shared_ptr<std::atomic<int>> counter_;
  };
  InFlight begin_request(const std::string& deployment, int index);

 private:
  using Key = std::pair<std::string, int>;
  struct Entry {
    ReplicaView view;
    std::shared_ptr<std::atomic<int>> in_flight;
  };
  struct DeploymentEntry {
    int replicas = 0;
  };
  mutable std::mutex mu_;
  std::map<std::string, DeploymentEntry> deployments_;
  std::map<Key, Entry> replicas_;
};

}  // namespace cellserve::fleet
