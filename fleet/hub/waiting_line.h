// A deployment's queue at the hub: requests wait here while every replica is at capacity. It is
// bounded (beyond max_waiting: Full, answered 429), each wait has a deadline (TimedOut, 504), a
// client that leaves stops waiting (Abandoned), and capacity that frees up goes to the waiting
// requests round-robin by client key (API key or address), so one busy client cannot starve the
// others. Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <list>
#include <mutex>
#include <string>
#include <utility>

#include "base/clock.h"

namespace cellserve::fleet {

class WaitingLine {
 public:
  using Clock = std::chrono::steady_clock;  // cellserve::Clock's time_point is this clock's
  // Told the number waiting each time a request joins the line (the traffic series' queue length),
  // with the line's lock held: it must not call back into the line.
  using LengthObserver = std::function<void(size_t waiting)>;
  // Deadlines and poll intervals are read on `clock` (a test's ManualClock, or the system's).
  explicit WaitingLine(const cellserve::Clock& clock = cellserve::Clock::system(), LengthObserver on_length = {})
      : clock_(clock), on_length_(std::move(on_length)) {}
  enum class Outcome { Granted, Full, TimedOut, Abandoned };

  // Tries to reserve capacity for one request: true when it did (and recorded what it got in
  // state the caller owns). Called with the line's lock held, from the waiting thread or from
  // whichever thread frees capacity, so it must not call back into the line.
  using TryGrant = std::function<bool()>;

  // Returns Granted as soon as `try_grant` succeeds for this request: at once when nobody waits
  // ahead of it, else in its key's turn. `gone` is polled (every kPollInterval) while waiting.
  Outcome wait(const std::string& client_key, size_t max_waiting, Clock::time_point deadline,
               const std::function<bool()>& gone, const TryGrant& try_grant);

  // `try_grant` now, only when nobody waits (a hedge never jumps the queue).
  bool try_now(const TryGrant& try_grant);

  // Capacity may have freed (a request ended, a replica became ready): grants waiting requests
  // in turn until one cannot be granted.
  void wake();

  size_t waiting() const;
  // How long the request that has waited longest has waited (zero when none waits).
  Clock::duration longest_wait() const;

  // How often a waiting request re-checks its client and deadline; and how often, at most, the
  // line retries its grants by itself (in case a change did not call wake(), e.g. a replica that
  // became ready).
  static constexpr std::chrono::milliseconds kPollInterval{250};

 private:
  struct Waiter {
    const TryGrant* try_grant = nullptr;
    bool granted = false;
    Clock::time_point since{};   // when it joined the line
    std::condition_variable cv;  // notified when granted: a grant wakes one request, not all
  };
  struct KeyQueue {
    std::string key;
    std::deque<Waiter*> waiters;
  };
  void grant_in_turn();  // with mu_ held
  void remove(Waiter* w);

  const cellserve::Clock& clock_;
  const LengthObserver on_length_;
  mutable std::mutex mu_;
  Clock::time_point last_attempt_{};  // the last grant_in_turn(), so polls retry once per interval
  std::list<KeyQueue> turns_;         // the key at the front is served next, then moves to the back
  size_t waiting_ = 0;
};

}  // namespace cellserve::fleet
