#include "base/wakeup.h"

namespace cellserve {

void Wakeup::request() {
  std::lock_guard lock(mu_);
  requested_ = true;
  cv_.notify_all();
}

bool Wakeup::wait(std::chrono::milliseconds interval) {
  std::unique_lock lock(mu_);
  clock_.wait_until(cv_, lock, clock_.now() + interval, [&] { return stopped_ || requested_; });
  requested_ = false;
  return !stopped_;
}

void Wakeup::stop() {
  std::lock_guard lock(mu_);
  stopped_ = true;
  cv_.notify_all();
}

bool Wakeup::stopped() const {
  std::lock_guard lock(mu_);
  return stopped_;
}

}  // namespace cellserve
