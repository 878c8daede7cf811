// A loop's wake-up: the loop waits up to its interval (on a Clock) for a request to run sooner,
// and learns when to stop. Thread-safe. A request made while the loop is busy is not lost: the
// next wait returns at once.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "base/clock.h"

namespace cellserve {

class Wakeup {
 public:
  explicit Wakeup(const Clock& clock = Clock::system()) : clock_(clock) {}

  // Asks the loop to run now.
  void request();
  // Waits until request() (since the last wait), stop(), or `interval` on the clock. False once
  // stopped.
  bool wait(std::chrono::milliseconds interval);
  void stop();
  bool stopped() const;

 private:
  const Clock& clock_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool requested_ = false;
  bool stopped_ = false;
};

}  // namespace cellserve
