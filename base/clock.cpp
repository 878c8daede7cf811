#include "base/clock.h"

namespace cellserve {
namespace {

class SystemClock final : public Clock {
 public:
  time_point now() const override { return std::chrono::steady_clock::now(); }
  int64_t wall_ms() const override {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
  std::cv_status wait_until(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
                            time_point deadline) const override {
    return cv.wait_until(lock, deadline);
  }
};

// How long of real time a sleeper on a ManualClock waits on the caller's condition variable before
// it returns to look at the manual time (it cannot wait on two condition variables at once). Only
// tests use a ManualClock.
constexpr std::chrono::milliseconds kManualRecheck{1};

}  // namespace

void Clock::sleep_until(time_point deadline) const {
  std::mutex mu;
  std::condition_variable never_notified;
  std::unique_lock lock(mu);
  while (wait_until(never_notified, lock, deadline) != std::cv_status::timeout) {}
}

const Clock& Clock::system() {
  static const SystemClock clock;
  return clock;
}

ManualClock::ManualClock(int64_t wall_ms) : wall_start_ms_(wall_ms) {}

Clock::time_point ManualClock::now() const {
  std::lock_guard lock(mu_);
  return time_point(since_start_);
}

int64_t ManualClock::wall_ms() const {
  std::lock_guard lock(mu_);
  return wall_start_ms_ + std::chrono::duration_cast<std::chrono::milliseconds>(since_start_).count();
}

void ManualClock::observe(uint64_t& seen) const {
  if (seen == generation_) return;
  seen = generation_;
  if (unobserved_ > 0) --unobserved_;
  changed_.notify_all();
}

std::cv_status ManualClock::wait_until(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
                                       time_point deadline) const {
  uint64_t seen = 0;
  {
    std::lock_guard mine(mu_);
    if (time_point(since_start_) >= deadline) return std::cv_status::timeout;
    seen = generation_;
    ++sleepers_;
    changed_.notify_all();
  }
  // One slice of real time on the caller's condition variable, then back to the caller, notified
  // or not: a notification that races the slice's end reads as a timeout, so the caller must look
  // at its predicate again (every caller loops), and the manual time is read on its next call.
  cv.wait_for(lock, kManualRecheck);
  std::lock_guard mine(mu_);
  observe(seen);
  --sleepers_;
  changed_.notify_all();
  return time_point(since_start_) >= deadline ? std::cv_status::timeout : std::cv_status::no_timeout;
}

void ManualClock::advance(duration d) {
  std::unique_lock lock(mu_);
  since_start_ += d;
  ++generation_;
  unobserved_ = sleepers_;
  changed_.notify_all();
  // Bounded in real time, so a sleeper stuck elsewhere fails the test rather than hanging it.
  changed_.wait_for(lock, std::chrono::seconds(10), [&] { return unobserved_ == 0; });
}

int ManualClock::sleepers() const {
  std::lock_guard lock(mu_);
  return sleepers_;
}

bool ManualClock::await_sleepers(int n, std::chrono::milliseconds limit) const {
  std::unique_lock lock(mu_);
  return changed_.wait_for(lock, limit, [&] { return sleepers_ >= n; });
}

}  // namespace cellserve
