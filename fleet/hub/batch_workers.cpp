#include "fleet/hub/batch_workers.h"

namespace cellserve::fleet {

BatchWorkers::~BatchWorkers() { join_all(); }

void BatchWorkers::start(const std::string& batch_id, std::function<void()> line) {
  std::lock_guard lock(mu_);
  ++in_flight_[batch_id];
  Worker& w = workers_.emplace_back();
  w.thread = std::thread([this, batch_id, &w, line = std::move(line)] {
    line();
    // The last time this thread takes mu_: once `done` is set, reap() may join it.
    {
      std::lock_guard inner(mu_);
      if (--in_flight_[batch_id] == 0) in_flight_.erase(batch_id);
      w.done = true;
    }
    wakeup_.request();
  });
}

size_t BatchWorkers::in_flight(const std::string& batch_id) const {
  std::lock_guard lock(mu_);
  const auto it = in_flight_.find(batch_id);
  return it == in_flight_.end() ? 0 : it->second;
}

size_t BatchWorkers::threads() const {
  std::lock_guard lock(mu_);
  return workers_.size();
}

void BatchWorkers::reap() {
  std::list<Worker> finished;
  {
    std::lock_guard lock(mu_);
    for (auto it = workers_.begin(); it != workers_.end();) {
      const auto next = std::next(it);
      if (it->done) finished.splice(finished.end(), workers_, it);  // the element stays put in memory
      it = next;
    }
  }
  for (Worker& w : finished) w.thread.join();
}

bool BatchWorkers::wait(std::chrono::milliseconds timeout) { return wakeup_.wait(timeout); }

void BatchWorkers::wake() { wakeup_.request(); }

void BatchWorkers::stop() { wakeup_.stop(); }

bool BatchWorkers::stopping() const { return wakeup_.stopped(); }

void BatchWorkers::join_all() {
  std::list<Worker> all;
  {
    std::lock_guard lock(mu_);
    all.swap(workers_);
  }
  for (Worker& w : all) w.thread.join();
}

}  // namespace cellserve::fleet
