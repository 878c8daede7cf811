// A replica for tests of the hub's request paths: a ReplicaTransport whose answers the test
// scripts (tests/fleet/hub/gateway_test.cpp, batch_service_test.cpp).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "fleet/tunnel/replica_transport.h"

namespace cellserve::fleet {

// A replica whose answer the test scripts. `hold` makes it wait, as a device still generating
// would, until the test releases it or the hub gives up on it (the writer's client_gone(), which
// the tunnel polls the same way).
class FakeReplica final : public ReplicaTransport {
 public:
  using Answer = std::function<Status(const net::HttpRequest&, net::ResponseWriter&, bool*)>;
  explicit FakeReplica(Answer answer) : answer_(std::move(answer)) {}

  Status forward(const net::HttpRequest& request, net::ResponseWriter& out, bool* responded) override {
    {
      std::lock_guard lock(mu_);
      ++calls_;
      last_path_ = request.path;
      last_auth_ = request.header("authorization");
    }
    return answer_(request, out, responded);
  }
  int calls() const {
    std::lock_guard lock(mu_);
    return calls_;
  }
  // Waits (bounded, in real time) until this replica has been sent `n` requests.
  bool await_calls(int n) const {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (calls() < n) {
      if (std::chrono::steady_clock::now() > give_up) return false;
      std::this_thread::yield();
    }
    return true;
  }
  std::string last_path() const {
    std::lock_guard lock(mu_);
    return last_path_;
  }
  std::string last_auth() const {
    std::lock_guard lock(mu_);
    return last_auth_;
  }

  // Answers `status` with `body` (and `headers`) at once.
  static Answer replies(int status, std::string body, net::HeaderList headers = {}) {
    return [status, body, headers](const net::HttpRequest&, net::ResponseWriter& out, bool* responded) {
      out.send(status, "application/json", body, headers);
      if (responded) *responded = true;
      return Status();
    };
  }
  // Never answers: returns once the hub's writer reports the client gone (a hedge's loser, a
  // first-byte deadline), as the tunnel does when it resets the stream. `cancelled` records it.
  static Answer hangs(std::atomic<bool>& cancelled) {
    return [&cancelled](const net::HttpRequest&, net::ResponseWriter& out, bool*) {
      // The tunnel polls client_gone() while it waits for the device; so does this fake, in real
      // time, bounded so that a broken gateway fails the test instead of hanging it.
      const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (!out.client_gone()) {
        if (std::chrono::steady_clock::now() > give_up) return Status::internal("the hub never gave up");
        std::this_thread::yield();
      }
      cancelled = true;
      return Status::unavailable("client gone");
    };
  }

 private:
  Answer answer_;
  mutable std::mutex mu_;
  int calls_ = 0;
  std::string last_path_;
  std::string last_auth_;
};

}  // namespace cellserve::fleet
