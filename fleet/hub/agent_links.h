// The agents connected to the hub right now: one tunnel per processor id, plus the one-time
// challenges agents sign to open a tunnel.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "fleet/tunnel/tunnel_client.h"

namespace cellserve::fleet {

struct AgentLink {
  std::string processor_id;
  std::unique_ptr<TunnelClient> tunnel;
  std::string pushed_assignments;  // the last assignment body the agent accepted ("" : none yet)
  int failed_polls = 0;
};

class AgentLinks {
 public:
  // A fresh challenge, valid once for `ttl`.
  std::string issue_challenge(std::chrono::seconds ttl = std::chrono::seconds(60));
  // True (and forgets it) when `challenge` was issued and has not expired or been used.
  bool redeem_challenge(const std::string& challenge);

  // Adds the link, replacing (and closing) an older one for the same processor.
  void add(std::shared_ptr<AgentLink> link);
  std::shared_ptr<AgentLink> find(const std::string& processor_id) const;
  std::vector<std::shared_ptr<AgentLink>> all() const;
  // Removes `link` if it is still the current one for its processor.
  void remove(const std::shared_ptr<AgentLink>& link);
  // Closes and drops every link.
  void close_all();

 private:
  using Clock = std::chrono::steady_clock;
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<AgentLink>> links_;
  std::map<std::string, Clock::time_point> challenges_;  // challenge → expiry
};

}  // namespace cellserve::fleet
