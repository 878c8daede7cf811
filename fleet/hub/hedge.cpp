// Hedged requests at the deployment endpoint: a short, non-streamed request that has no answer
// after the hedge delay is sent to a second free replica too; the first whole answer wins and
// the other leg is cancelled (its stream reset, so its device frees the slot).
#include <algorithm>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "fleet/hub/buffered_writer.h"
#include "fleet/hub/failover_writer.h"
#include "fleet/hub/first_byte_deadline.h"
#include "fleet/hub/gateway.h"
#include "fleet/hub/relay_writer.h"
#include "fleet/hub/replica_failure.h"

namespace cellserve::fleet {
namespace {

// One replica's attempt at a hedged request, answered into a buffer on its own thread.
struct HedgeLeg {
  Reservation reservation;  // freed once every leg has ended
  BufferedWriter out;
  Status status;
  bool done = false;  // guarded by the hedge's mutex
  std::thread thread;
  // A whole answer that settles the request (a replica failure such as 500 or 429 does not).
  bool answered() const { return done && status.ok() && out.status() != 0 && !is_replica_failure(out.status()); }
};

// The wait before a hedge: the spec's, else twice the first replica's estimate (at least 50 ms).
std::chrono::milliseconds hedge_delay(const GatewaySettings& g, double estimate_s) {
  if (g.hedge_delay_ms > 0) return std::chrono::milliseconds(g.hedge_delay_ms);
  return std::chrono::milliseconds(std::max<int64_t>(50, static_cast<int64_t>(estimate_s * 2000)));
}

// How often the hedge looks at whether its client left while no leg has answered (the legs' own
// relays check as often: tunnel_client.cpp's kGonePoll).
constexpr std::chrono::milliseconds kClientCheck{250};

}  // namespace

bool Gateway::forward_hedged(const net::HttpRequest& forwarded, Reservation first, const DeploymentView& dep,
                             const RequestWork& work, const std::string& rest, Attempts& tries,
                             net::ResponseWriter& w) {
  std::set<std::string>& failed = tries.failed;
  std::string& last_failure = tries.last_failure;
  std::optional<HeldAnswer>& held = tries.held;
  std::vector<int>& unconfirmed = tries.unconfirmed;
  const std::string& name = dep.name;
  const Clock& clock = state_.clock;
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::unique_ptr<HedgeLeg>> legs;
  auto launch = [&](Reservation r) {
    auto leg = std::make_unique<HedgeLeg>();
    leg->reservation = std::move(r);
    HedgeLeg* raw = leg.get();
    legs.push_back(std::move(leg));
    raw->thread = std::thread([&, raw] {
      const Attempt a =
          forwarder_.send(raw->reservation, dep, forwarded, rest, raw->out, first_byte_limit(dep.gateway, work, false));
      std::lock_guard lock(mu);
      raw->status = a.expired ? Status::unavailable("no first byte within the hub's deadline") : a.status;
      raw->done = true;
      cv.notify_all();
    });
  };
  const auto delay = hedge_delay(dep.gateway, first.estimate_s);
  const std::string first_device = first.processor_id;
  launch(std::move(first));

  std::unique_lock lock(mu);
  clock.wait_until(cv, lock, clock.now() + delay, [&] { return legs[0]->done; });
  if (!legs[0]->answered() && !w.client_gone()) {
    // No answer within the delay: a second replica, if one is free now (a hedge never queues).
    lock.unlock();
    std::set<std::string> excluded = failed;
    excluded.insert(first_device);
    Reservation second;
    if (forwarder_.line(name).try_now([&] { return forwarder_.reserve(name, work, excluded, second); })) {
      state_.metrics.count_hedge(name);
      state_.traffic.count_hedge(name);
      lock.lock();
      launch(std::move(second));
    } else {
      lock.lock();
    }
  }
  HedgeLeg* winner = nullptr;
  for (;;) {
    for (auto& leg : legs) {
      if (leg->answered()) winner = leg.get();
    }
    const bool all_done = std::all_of(legs.begin(), legs.end(), [](const auto& l) { return l->done; });
    if (winner != nullptr || all_done) break;
    lock.unlock();
    const bool gone = w.client_gone();
    lock.lock();
    if (gone) break;
    clock.wait_until(cv, lock, clock.now() + kClientCheck);
  }
  // The other legs still running are cancelled: their streams are reset, and their devices free
  // the slots. A leg that already ended keeps its outcome (a failure is recorded below).
  for (auto& leg : legs) {
    if (leg.get() != winner && !leg->done) leg->out.cancel();
  }
  lock.unlock();
  // The answer goes out first: a cancelled leg may take its tunnel's poll interval to return.
  if (winner != nullptr) {
    FailoverWriter tagged(w, /*may_retry=*/false, winner->reservation.index);
    RelayWriter allowed(tagged);  // only the device headers a user may see
    winner->out.replay(allowed);
  }
  for (auto& leg : legs) leg->thread.join();
  for (auto& leg : legs) {
    const int index = leg->reservation.index;
    const std::string device = leg->reservation.processor_id;
    leg->reservation = Reservation();              // the slot is free again before the result is recorded
    if (leg.get() == winner || leg->answered()) {  // a second whole answer lost the race, but is one
      forwarder_.record(name, index, true);
    } else if (leg->done && !leg->out.client_gone()) {
      // It finished without a usable answer (a failure, not a cancellation).
      const int refused = leg->status.ok() ? leg->out.status() : 0;
      if (!is_replica_failure(refused)) {
        forwarder_.record(name, index, false);  // the transport's or the deadline's: the replica's
      } else if (winner != nullptr) {
        forwarder_.record(name, index, false);  // another replica answered the same request
      } else {
        unconfirmed.push_back(index);  // counted once another replica answers it (gateway.cpp)
      }
      failed.insert(device);
      last_failure = "replica " + std::to_string(index) + ": " +
                     (leg->status.ok() ? "answered " + std::to_string(leg->out.status()) : leg->status.message());
      held.reset();
      if (is_replica_failure(refused)) {
        forwarder_.count_refusal(name, index, refused);
        // Kept as the user would have seen it: the relayed headers, tagged with the replica.
        BufferedWriter unused;  // a failure is held back, never passed on
        FailoverWriter keep(unused, /*may_retry=*/true, index);
        RelayWriter relayed(keep);
        leg->out.replay(relayed);
        held = keep.take_held();
      }
    }
  }
  forwarder_.line(name).wake();
  return winner != nullptr;
}

}  // namespace cellserve::fleet
