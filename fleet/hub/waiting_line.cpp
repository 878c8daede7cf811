#include "fleet/hub/waiting_line.h"

#include <algorithm>

namespace cellserve::fleet {

WaitingLine::Outcome WaitingLine::wait(const std::string& client_key, size_t max_waiting, Clock::time_point deadline,
                                       const std::function<bool()>& gone, const TryGrant& try_grant) {
  std::unique_lock lock(mu_);
  if (waiting_ == 0 && try_grant()) return Outcome::Granted;
  if (waiting_ >= max_waiting) return Outcome::Full;
  Waiter me;
  me.try_grant = &try_grant;
  me.since = clock_.now();
  auto turn = std::find_if(turns_.begin(), turns_.end(), [&](const KeyQueue& q) { return q.key == client_key; });
  if (turn == turns_.end()) turn = turns_.insert(turns_.end(), KeyQueue{client_key, {}});
  turn->waiters.push_back(&me);
  ++waiting_;
  if (on_length_) on_length_(waiting_);
  grant_in_turn();  // capacity may be free for those ahead of this request
  for (;;) {
    if (me.granted) return Outcome::Granted;
    const auto now = clock_.now();
    if (now >= deadline) {
      remove(&me);
      return Outcome::TimedOut;
    }
    clock_.wait_until(me.cv, lock, std::min(deadline, now + kPollInterval));
    if (me.granted) return Outcome::Granted;
    if (gone && gone()) {
      remove(&me);
      return Outcome::Abandoned;
    }
    // Changes that call no wake() (a replica that became ready) are caught by one grant attempt
    // per poll interval for the whole line, not one per waiting request.
    if (clock_.now() - last_attempt_ >= kPollInterval) grant_in_turn();
  }
}

bool WaitingLine::try_now(const TryGrant& try_grant) {
  std::lock_guard lock(mu_);
  return waiting_ == 0 && try_grant();
}

void WaitingLine::wake() {
  std::lock_guard lock(mu_);
  grant_in_turn();
}

size_t WaitingLine::waiting() const {
  std::lock_guard lock(mu_);
  return waiting_;
}

WaitingLine::Clock::duration WaitingLine::longest_wait() const {
  std::lock_guard lock(mu_);
  if (waiting_ == 0) return {};
  // Each key's queue is in arrival order: its front has waited longest of that key.
  Clock::time_point first = Clock::time_point::max();
  for (const KeyQueue& q : turns_) first = std::min(first, q.waiters.front()->since);
  return clock_.now() - first;
}

void WaitingLine::grant_in_turn() {
  last_attempt_ = clock_.now();
  while (!turns_.empty()) {
    KeyQueue& q = turns_.front();
    Waiter* w = q.waiters.front();
    if (!(*w->try_grant)()) break;
    w->granted = true;
    w->cv.notify_one();  // only the granted request wakes
    q.waiters.pop_front();
    --waiting_;
    if (q.waiters.empty()) {
      turns_.pop_front();
    } else {
      turns_.splice(turns_.end(), turns_, turns_.begin());  // this key's next request waits its turn
    }
  }
}

void WaitingLine::remove(Waiter* w) {
  for (auto it = turns_.begin(); it != turns_.end(); ++it) {
    auto pos = std::find(it->waiters.begin(), it->waiters.end(), w);
    if (pos == it->waiters.end()) continue;
    it->waiters.erase(pos);
    --waiting_;
    if (it->waiters.empty()) turns_.erase(it);
    return;
  }
}

}  // namespace cellserve::fleet
