// The agents connected to the hub right now: one tunnel per processor id, plus the one-time
// challenges agents sign to open a tunnel.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "fleet/tunnel/tunnel_client.h"

namespace cellserve::fleet {

// One connected agent: its tunnel and its heartbeat, a thread of its own that pushes the
// assignments the reconcile loop wants and polls the agent's status, so that an agent that is
// slow to answer delays nobody else.
struct AgentLink {
  // Heartbeat intervals and silences are timed on `clock`.
  explicit AgentLink(const Clock& clock = Clock::system()) : clock_(clock), answered_ms_(now_ms()) {}

  std::string processor_id;
  std::unique_ptr<TunnelClient> tunnel;

  // Starts the heartbeat: `beat(*this)` runs once per `interval`, or sooner after
  // want_assignments(). Call at most once.
  void start_heartbeat(std::chrono::milliseconds interval, std::function<void(AgentLink&)> beat);
  // Sets the assignment body the agent should have and wakes the heartbeat to push it.
  void want_assignments(std::string body);
  // The body to push, when it differs from the one the agent last accepted.
  std::optional<std::string> assignments_to_push() const;
  void assignments_pushed(const std::string& body);

  int failed_polls = 0;  // consecutive status polls that failed (heartbeat thread only)

  // The agent answered a status poll (a heartbeat) now.
  void answered();
  // No status poll has been answered for `limit` (counted from the link's creation before the
  // first): its replicas take no new requests until it answers again. A frozen device is noticed
  // this way well before its tunnel's ping timeout.
  bool silent_for(std::chrono::milliseconds limit) const;

  // Closes the tunnel and joins the heartbeat. Never called on the heartbeat thread: that thread
  // holds no reference to its link.
  ~AgentLink();

 private:
  mutable std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  bool woken_ = false;
  std::string wanted_;  // guarded by mu_
  std::string pushed_;  // the last body the agent accepted ("" : none yet)
  std::thread heartbeat_;
  const Clock& clock_;
  std::atomic<int64_t> answered_ms_;

  int64_t now_ms() const;  // clock_'s monotonic time
};

class AgentLinks {
 public:
  // A fresh challenge for a client at `address`, valid once for `ttl`. A client address holds at
  // most kChallengesPerAddress at once (a new one replaces its oldest), so a flood from one
  // address cannot push out anyone else's. nullopt when kMaxChallenges are outstanding.
  static constexpr size_t kChallengesPerAddress = 16;
  static constexpr size_t kMaxChallenges = 10000;
  std::optional<std::string> issue_challenge(const std::string& address,
                                             std::chrono::seconds ttl = std::chrono::seconds(60));
  // True (and forgets it) when `challenge` was issued and has not expired or been used.
  bool redeem_challenge(const std::string& challenge);

  // Adds the link, replacing (and closing) an older one for the same processor.
  void add(std::shared_ptr<AgentLink> link);
  std::shared_ptr<AgentLink> find(const std::string& processor_id) const;
  std::vector<std::shared_ptr<AgentLink>> all() const;
  // Links held now.
  size_t size() const;
  // Removes `link` if it is still the current one for its processor.
  void remove(const std::shared_ptr<AgentLink>& link);
  // Closes and drops every link.
  void close_all();

 private:
  using Clock = std::chrono::steady_clock;
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<AgentLink>> links_;
  struct Challenge {
    Clock::time_point expiry;
    std::string address;
  };
  std::map<std::string, Challenge> challenges_;                 // challenge → its expiry and client
  std::map<std::string, std::vector<std::string>> by_address_;  // client → its challenges, oldest first
  void forget_challenge(std::map<std::string, Challenge>::iterator it);
};

}  // namespace cellserve::fleet
