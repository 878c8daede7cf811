#include "fleet/hub/agent_links.h"

#include "fleet/crypto/identity.h"

namespace cellserve::fleet {

void AgentLink::start_heartbeat(std::chrono::milliseconds interval, std::function<void(AgentLink&)> beat) {
  heartbeat_ = std::thread([this, interval, beat = std::move(beat)] {
    std::unique_lock lock(mu_);
    while (!stopping_) {
      lock.unlock();
      beat(*this);
      lock.lock();
      clock_.wait_until(wake_, lock, clock_.now() + interval, [&] { return stopping_ || woken_; });
      woken_ = false;
    }
  });
}

int64_t AgentLink::now_ms() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(clock_.now().time_since_epoch()).count();
}

void AgentLink::answered() { answered_ms_.store(now_ms()); }

bool AgentLink::silent_for(std::chrono::milliseconds limit) const {
  return now_ms() - answered_ms_.load() > limit.count();
}

void AgentLink::want_assignments(std::string body) {
  std::lock_guard lock(mu_);
  if (body == wanted_) return;
  wanted_ = std::move(body);
  woken_ = true;
  wake_.notify_all();
}

std::optional<std::string> AgentLink::assignments_to_push() const {
  std::lock_guard lock(mu_);
  if (wanted_.empty() || wanted_ == pushed_) return std::nullopt;
  return wanted_;
}

void AgentLink::assignments_pushed(const std::string& body) {
  std::lock_guard lock(mu_);
  pushed_ = body;
}

AgentLink::~AgentLink() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    wake_.notify_all();
  }
  if (tunnel) tunnel->close();  // a call in flight fails at once
  if (heartbeat_.joinable()) heartbeat_.join();
}

std::optional<std::string> AgentLinks::issue_challenge(const std::string& address, std::chrono::seconds ttl) {
  std::lock_guard lock(mu_);
  const auto now = Clock::now();
  for (auto it = challenges_.begin(); it != challenges_.end();) {
    auto next = std::next(it);
    if (it->second.expiry < now) forget_challenge(it);
    it = next;
  }
  std::vector<std::string>& mine = by_address_[address];
  if (mine.size() >= kChallengesPerAddress) {
    forget_challenge(challenges_.find(mine.front()));  // this client's oldest, nobody else's
  } else if (challenges_.size() >= kMaxChallenges) {
    if (mine.empty()) by_address_.erase(address);
    return std::nullopt;
  }
  std::string challenge = random_hex(32);
  challenges_[challenge] = Challenge{now + ttl, address};
  mine.push_back(challenge);  // `mine` is still the entry: forgetting one of 16 never empties it
  return challenge;
}

void AgentLinks::forget_challenge(std::map<std::string, Challenge>::iterator it) {
  if (it == challenges_.end()) return;
  const auto owner = by_address_.find(it->second.address);
  if (owner != by_address_.end()) {
    std::erase(owner->second, it->first);
    if (owner->second.empty()) by_address_.erase(owner);
  }
  challenges_.erase(it);
}

bool AgentLinks::redeem_challenge(const std::string& challenge) {
  std::lock_guard lock(mu_);
  const auto it = challenges_.find(challenge);
  if (it == challenges_.end()) return false;
  const bool fresh = it->second.expiry >= Clock::now();
  forget_challenge(it);
  return fresh;
}

void AgentLinks::add(std::shared_ptr<AgentLink> link) {
  std::shared_ptr<AgentLink> old;
  {
    std::lock_guard lock(mu_);
    auto& slot = links_[link->processor_id];
    old = std::move(slot);
    slot = std::move(link);
  }
  if (old) old->tunnel->close();
}

std::shared_ptr<AgentLink> AgentLinks::find(const std::string& processor_id) const {
  std::lock_guard lock(mu_);
  const auto it = links_.find(processor_id);
  return it == links_.end() ? nullptr : it->second;
}

size_t AgentLinks::size() const {
  std::lock_guard lock(mu_);
  return links_.size();
}

std::vector<std::shared_ptr<AgentLink>> AgentLinks::all() const {
  std::lock_guard lock(mu_);
  std::vector<std::shared_ptr<AgentLink>> out;
  for (const auto& kv : links_) out.push_back(kv.second);
  return out;
}

void AgentLinks::remove(const std::shared_ptr<AgentLink>& link) {
  std::lock_guard lock(mu_);
  const auto it = links_.find(link->processor_id);
  if (it != links_.end() && it->second == link) links_.erase(it);
}

void AgentLinks::close_all() {
  std::map<std::string, std::shared_ptr<AgentLink>> links;
  {
    std::lock_guard lock(mu_);
    links.swap(links_);
  }
  for (auto& kv : links) kv.second->tunnel->close();
}

}  // namespace cellserve::fleet
