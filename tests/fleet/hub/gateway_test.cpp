// The gateway's failover, hedging and waiting line, driven through Gateway::serve_deployment
// with fake replicas (ReplicaTransport) and a manual clock: no sleeps, no network, no timing
// that depends on the machine.
#include "fleet/hub/gateway.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

#include "fleet/hub/user_access.h"
#include "tests/fleet/hub/fake_replica.h"
#include "tests/support/fake_response_writer.h"

namespace cellserve::fleet {
namespace {

using namespace std::chrono_literals;

// A HubState with deployment "dep" on fake devices p0, p1, ... (replica i on device "p<i>").
class GatewayTest : public ::testing::Test {
 protected:
  GatewayTest() : state_(HubOptions{}, clock_) {}

  void deploy(int replicas, GatewaySettings gateway, int slots = 4) {
    Deployment d;
    d.spec.name = "dep";
    d.spec.replicas = replicas;
    d.spec.engine.parallel = slots;
    d.spec.gateway = gateway;
    d.created_ms = 1;
    std::vector<Replica> rows;
    for (int i = 0; i < replicas; ++i) {
      Replica r;
      r.deployment = "dep";
      r.index = i;
      r.processor_id = "p" + std::to_string(i);
      r.state = ReplicaState::Ready;
      r.secrets_version = 1;
      rows.push_back(r);
    }
    state_.registry.refresh({d}, rows, {{"dep", "replica-key"}});
  }
  FakeReplica& device(int i, FakeReplica::Answer answer) {
    auto fake = std::make_shared<FakeReplica>(std::move(answer));
    std::lock_guard lock(devices_mu_);
    devices_["p" + std::to_string(i)] = fake;
    return *fake;
  }

  // A chat request for `max_tokens` tokens, as the deployment endpoint receives it.
  static net::HttpRequest chat(int max_tokens) {
    net::HttpRequest req;
    req.method = "POST";
    req.path = "/d/dep/v1/chat/completions";
    req.headers["authorization"] = "Bearer user-key";
    req.body = R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":)" + std::to_string(max_tokens) + "}";
    return req;
  }
  void serve(const net::HttpRequest& req, cellserve::testing::FakeResponseWriter& w) {
    gateway_.serve_deployment(req, w, "dep", "", "/chat/completions");
  }

  ManualClock clock_;
  HubState state_;
  std::mutex devices_mu_;  // a test may connect a device while a request waits for one
  std::map<std::string, std::shared_ptr<FakeReplica>> devices_;
  ReplicaForwarder forwarder_{state_, [this](const std::string& id, bool) -> std::shared_ptr<ReplicaTransport> {
                                std::lock_guard lock(devices_mu_);
                                const auto it = devices_.find(id);
                                return it == devices_.end() ? nullptr : it->second;
                              }};
  Gateway gateway_{state_, forwarder_};
};

TEST_F(GatewayTest, AReplicaThatRefusesWith503IsRetriedOnceElsewhereAndTheUserSeesTheAnswer) {
  deploy(2, GatewaySettings{});
  FakeReplica& refusing = device(0, FakeReplica::replies(503, R"({"error":{"message":"overloaded"}})"));
  FakeReplica& answering = device(1, FakeReplica::replies(200, R"({"choices":[{"message":{"content":"hello"}}]})"));
  cellserve::testing::FakeResponseWriter w;
  serve(chat(5), w);
  EXPECT_EQ(w.status, 200);
  EXPECT_NE(w.body.find("hello"), std::string::npos);
  EXPECT_EQ(w.header("X-Cellserve-Replica"), "1");
  EXPECT_EQ(refusing.calls(), 1);  // ties go to the lower index: replica 0 first
  EXPECT_EQ(answering.calls(), 1);
  // The replica saw its own path and key, never the user's.
  EXPECT_EQ(answering.last_path(), "/d/dep/r/1/v1/chat/completions");
  EXPECT_EQ(answering.last_auth(), "Bearer replica-key");
  EXPECT_EQ(state_.registry.replicas("dep")[0].in_flight, 0);
  EXPECT_EQ(state_.registry.replicas("dep")[1].in_flight, 0);
}

TEST_F(GatewayTest, EveryAnswerIsMeasuredOnTheHubsClockWithItsUsageClampedByWhatItSent) {
  deploy(1, GatewaySettings{});
  // A stream: its first token 2 s after the request left the hub, the rest 1 s later; its usage
  // claims 1000 completion tokens where it sent 8 bytes of text.
  device(0, [this](const net::HttpRequest&, net::ResponseWriter& out, bool* responded) {
    clock_.advance(std::chrono::seconds(2));
    if (responded) *responded = true;
    out.begin_stream(200, "text/event-stream", {});
    out.write("data: {\"choices\":[{\"delta\":{\"content\":\"abcd\"}}]}\n\n");
    clock_.advance(std::chrono::seconds(1));
    out.write("data: {\"choices\":[{\"delta\":{\"content\":\"efgh\"}}]}\n\n");
    out.write("data: {\"choices\":[],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":1000}}\n\n");
    out.end_stream();
    return Status();
  });
  cellserve::testing::FakeResponseWriter w;
  serve(chat(16), w);
  EXPECT_EQ(w.status, 200);
  const ReplicaView r = state_.registry.find("dep", 0).replica;
  EXPECT_EQ(r.measured.answers(), 1);
  EXPECT_DOUBLE_EQ(r.measured.prefill().value, 10 / 2.0) << "prompt tokens over the time to the first token";
  EXPECT_DOUBLE_EQ(r.measured.decode().value, (8 - 1) / 1.0) << "8 bytes of text: at most 8 tokens";
  // A refusal shows no speed.
  devices_.clear();
  device(0, FakeReplica::replies(503, R"({"error":{"message":"overloaded"}})"));
  cellserve::testing::FakeResponseWriter refused;
  serve(chat(16), refused);
  EXPECT_EQ(state_.registry.find("dep", 0).replica.measured.answers(), 1);
}

TEST_F(GatewayTest, WhenEveryReplicaRefusesTheUserGetsOne503NamingTheLastFailure) {
  deploy(2, GatewaySettings{});
  FakeReplica& a = device(0, FakeReplica::replies(503, "{}"));
  FakeReplica& b = device(1, FakeReplica::replies(503, "{}"));
  cellserve::testing::FakeResponseWriter w;
  serve(chat(5), w);
  EXPECT_EQ(w.status, 503);
  EXPECT_NE(w.body.find("every replica tried for 'dep' failed before answering"), std::string::npos) << w.body;
  EXPECT_EQ(a.calls() + b.calls(), 2);  // each device once: a failed device is not tried again
}

TEST_F(GatewayTest, AReplicaThatKeepsFailingIsEjectedForItsTimeOnTheHubsClockThenProbed) {
  deploy(2, GatewaySettings{});
  FakeReplica& failing = device(0, FakeReplica::replies(503, "{}"));
  device(1, FakeReplica::replies(200, R"({"ok":true})"));
  for (int i = 0; i < ReplicaRegistry::kEjectAfterFailures; ++i) {
    cellserve::testing::FakeResponseWriter w;
    serve(chat(5), w);
    EXPECT_EQ(w.status, 200);
  }
  EXPECT_EQ(failing.calls(), ReplicaRegistry::kEjectAfterFailures);
  EXPECT_TRUE(state_.registry.replicas("dep")[0].ejected);
  cellserve::testing::FakeResponseWriter passed_over;
  serve(chat(5), passed_over);
  EXPECT_EQ(passed_over.status, 200);
  EXPECT_EQ(failing.calls(), ReplicaRegistry::kEjectAfterFailures) << "an ejected replica got a request";
  clock_.advance(ReplicaRegistry::kEjectionTime - 1ms);
  EXPECT_TRUE(state_.registry.replicas("dep")[0].ejected);
  clock_.advance(1ms);
  cellserve::testing::FakeResponseWriter probe;
  serve(chat(5), probe);
  EXPECT_EQ(probe.status, 200);
  EXPECT_EQ(failing.calls(), ReplicaRegistry::kEjectAfterFailures + 1) << "no probe after the ejection time";
}

// A sick replica whose health looks fine: it answers 500 (or 429: no room) to every request. The
// user never sees that while another replica can take the request, and each refusal is counted
// against the replica that sent it.
TEST_F(GatewayTest, AReplicasOwn500Or429IsFailedOverToAHealthyReplicaAndCounted) {
  for (const int sick_status : {500, 429}) {
    SCOPED_TRACE(sick_status);
    devices_.clear();
    deploy(2, GatewaySettings{});
    FakeReplica& sick = device(0, FakeReplica::replies(sick_status, R"({"error":{"message":"engine crashed"}})"));
    FakeReplica& healthy = device(1, FakeReplica::replies(200, R"({"choices":[{"message":{"content":"hello"}}]})"));
    const int64_t before = state_.metrics.refusals("dep", 0, sick_status);
    const int failures_before = state_.registry.replicas("dep")[0].consecutive_failures;
    cellserve::testing::FakeResponseWriter w;
    serve(chat(5), w);
    EXPECT_EQ(w.status, 200) << w.body;
    EXPECT_NE(w.body.find("hello"), std::string::npos);
    EXPECT_EQ(w.header("X-Cellserve-Replica"), "1");
    EXPECT_EQ(sick.calls(), 1);
    EXPECT_EQ(healthy.calls(), 1);
    EXPECT_EQ(state_.metrics.refusals("dep", 0, sick_status), before + 1);
    EXPECT_EQ(state_.registry.replicas("dep")[0].consecutive_failures, failures_before + 1)
        << "a refusal is a failure of the replica";
  }
}

// With no replica left to try, the user gets the last replica's own answer: its status, message
// and Retry-After, as a single server would have sent them, tagged with the replica.
TEST_F(GatewayTest, WhenEveryReplicaFailsTheLastOnesOwnAnswerReachesTheUser) {
  deploy(2, GatewaySettings{});
  device(0, FakeReplica::replies(429, R"({"error":{"message":"replica 0 is full"}})", {{"Retry-After", "7"}}));
  device(1, FakeReplica::replies(429, R"({"error":{"message":"replica 1 is full"}})", {{"Retry-After", "7"}}));
  cellserve::testing::FakeResponseWriter w;
  serve(chat(5), w);
  EXPECT_EQ(w.status, 429);
  EXPECT_NE(w.body.find("replica 1 is full"), std::string::npos) << w.body;
  EXPECT_EQ(w.header("retry-after"), "7");  // a device's headers reach the user lower-cased (device_headers.h)
  EXPECT_EQ(w.header("X-Cellserve-Replica"), "1");
}

// A client sends requests every replica refuses with a 500 (a template they all reject, say):
// each gets the replica's answer, and no replica is ejected for it. Counted at once, three such
// requests would have ejected both replicas, and every user would then get 503.
TEST_F(GatewayTest, ARequestEveryReplicaRefusesEjectsNone) {
  deploy(2, GatewaySettings{});
  FakeReplica& a = device(0, FakeReplica::replies(500, R"({"error":{"message":"cannot render this conversation"}})"));
  FakeReplica& b = device(1, FakeReplica::replies(500, R"({"error":{"message":"cannot render this conversation"}})"));
  for (int i = 0; i < 10; ++i) {
    cellserve::testing::FakeResponseWriter w;
    serve(chat(5), w);
    EXPECT_EQ(w.status, 500) << i;
    EXPECT_NE(w.body.find("cannot render"), std::string::npos) << w.body;
  }
  for (const ReplicaView& r : state_.registry.replicas("dep")) {
    EXPECT_FALSE(r.ejected) << "replica " << r.index;
    EXPECT_EQ(r.consecutive_failures, 0) << "replica " << r.index;
  }
  EXPECT_EQ(a.calls() + b.calls(), 20) << "each request tried both replicas";
  // The same refusal, then a healthy replica's answer: now it counts.
  device(1, FakeReplica::replies(200, R"({"ok":true})"));
  cellserve::testing::FakeResponseWriter w;
  serve(chat(5), w);
  EXPECT_EQ(w.status, 200);
  EXPECT_EQ(state_.registry.replicas("dep")[0].consecutive_failures, 1);
}

// A 501 says the route is not served by the deployment's engine: the same on every replica, so
// it is the answer, not a failure of the replica.
TEST_F(GatewayTest, A501IsTheAnswerNotAFailure) {
  deploy(2, GatewaySettings{});
  FakeReplica& a = device(0, FakeReplica::replies(501, R"({"error":{"message":"no embeddings"}})"));
  FakeReplica& b = device(1, FakeReplica::replies(501, R"({"error":{"message":"no embeddings"}})"));
  cellserve::testing::FakeResponseWriter w;
  serve(chat(5), w);
  EXPECT_EQ(w.status, 501);
  EXPECT_EQ(a.calls() + b.calls(), 1);
  EXPECT_EQ(state_.registry.replicas("dep")[0].consecutive_failures, 0);
}

// A hedge leg that answers 500 at once does not win the race: the other leg's answer does.
TEST_F(GatewayTest, AFast500LosesTheHedgeRace) {
  GatewaySettings g;
  g.hedge_max_tokens = 16;
  g.hedge_delay_ms = 500;
  deploy(2, g);
  FakeReplica& sick = device(0, FakeReplica::replies(500, R"({"error":{"message":"engine crashed"}})"));
  FakeReplica& healthy = device(1, FakeReplica::replies(200, R"({"choices":[{"message":{"content":"hedged"}}]})"));
  cellserve::testing::FakeResponseWriter w;
  serve(chat(8), w);
  EXPECT_EQ(w.status, 200) << w.body;
  EXPECT_NE(w.body.find("hedged"), std::string::npos);
  EXPECT_EQ(sick.calls(), 1);
  EXPECT_EQ(healthy.calls(), 1);
  EXPECT_EQ(state_.metrics.refusals("dep", 0, 500), 1);
}

TEST_F(GatewayTest, TheHedgeFiresAtItsDelayAndTheLoserIsCancelled) {
  GatewaySettings g;
  g.hedge_max_tokens = 16;
  g.hedge_delay_ms = 500;
  deploy(2, g);
  std::atomic<bool> slow_cancelled{false};
  FakeReplica& slow = device(0, FakeReplica::hangs(slow_cancelled));
  FakeReplica& fast = device(1, FakeReplica::replies(200, R"({"choices":[{"message":{"content":"fast"}}]})"));
  cellserve::testing::FakeResponseWriter w;
  std::thread user([&] { serve(chat(8), w); });
  ASSERT_TRUE(clock_.await_sleepers(1));  // the hedge waits for its delay
  clock_.advance(499ms);
  EXPECT_EQ(fast.calls(), 0) << "the hedge fired before its delay";
  clock_.advance(1ms);
  user.join();
  EXPECT_EQ(w.status, 200);
  EXPECT_NE(w.body.find("fast"), std::string::npos);
  EXPECT_EQ(w.header("X-Cellserve-Replica"), "1");
  EXPECT_EQ(slow.calls(), 1);
  EXPECT_EQ(fast.calls(), 1);
  EXPECT_TRUE(slow_cancelled.load()) << "the losing leg was not cancelled";
  EXPECT_EQ(state_.registry.replicas("dep")[0].in_flight, 0);
}

TEST_F(GatewayTest, ALongRequestIsNeverHedged) {
  GatewaySettings g;
  g.hedge_max_tokens = 16;
  g.hedge_delay_ms = 500;
  g.first_byte_timeout_ms = 60000;
  deploy(2, g);
  FakeReplica& only = device(0, FakeReplica::replies(200, "{}"));
  FakeReplica& other = device(1, FakeReplica::replies(200, "{}"));
  cellserve::testing::FakeResponseWriter w;
  serve(chat(17), w);
  EXPECT_EQ(w.status, 200);
  EXPECT_EQ(only.calls(), 1);
  EXPECT_EQ(other.calls(), 0);
}

TEST_F(GatewayTest, AReplicaSilentPastTheFirstByteDeadlineFailsOverToAnother) {
  GatewaySettings g;
  g.first_byte_timeout_ms = 2000;
  deploy(2, g);
  std::atomic<bool> silent_cut{false};
  FakeReplica& silent = device(0, FakeReplica::hangs(silent_cut));
  FakeReplica& answering = device(1, FakeReplica::replies(200, R"({"ok":true})"));
  cellserve::testing::FakeResponseWriter w;
  std::thread user([&] { serve(chat(5), w); });
  ASSERT_TRUE(silent.await_calls(1));
  // The silent replica holds the request; nothing else may happen until the deadline.
  clock_.advance(1999ms);
  EXPECT_EQ(answering.calls(), 0);
  clock_.advance(1ms);
  user.join();
  EXPECT_TRUE(silent_cut.load());
  EXPECT_EQ(w.status, 200);
  EXPECT_EQ(answering.calls(), 1);
}

TEST_F(GatewayTest, AQueuedRequestTimesOutExactlyAtItsQueueDeadline) {
  GatewaySettings g;
  g.queue_timeout_ms = 1000;
  g.first_byte_timeout_ms = 3'600'000;
  deploy(1, g, /*slots=*/1);
  std::atomic<bool> first_cut{false};
  FakeReplica& only = device(0, FakeReplica::hangs(first_cut));
  // The first request takes the only slot and holds it.
  cellserve::testing::FakeResponseWriter first;
  std::thread holder([&] { serve(chat(5), first); });
  ASSERT_TRUE(only.await_calls(1));
  // The second waits in the line for 1000 ms of the hub's clock.
  cellserve::testing::FakeResponseWriter second;
  std::thread waiter([&] { serve(chat(5), second); });
  ASSERT_TRUE(clock_.await_sleepers(1));  // the waiter is in the line
  clock_.advance(999ms);
  EXPECT_EQ(second.status, 0) << "the queue deadline fired early";
  EXPECT_EQ(forwarder_.queue_lengths()["dep"], 1u);
  clock_.advance(1ms);
  waiter.join();
  EXPECT_EQ(second.status, 504);
  EXPECT_NE(second.body.find("no replica of 'dep' became free within 1000 ms"), std::string::npos) << second.body;
  EXPECT_EQ(forwarder_.queue_lengths()["dep"], 0u);
  // The first request ends at its own first-byte deadline.
  clock_.advance(1h);
  holder.join();
  EXPECT_TRUE(first_cut.load());
  EXPECT_EQ(first.status, 504);
}

// A ready replica that cannot be reached this moment (its agent is re-dialing another hub after
// its own died) is waited for: the request is answered once the agent is back, not refused with
// 503 in between. One that stays unreachable ends the wait after kUnreachableReadyWait with 504.
TEST_F(GatewayTest, AReadyReplicaUnreachableForAMomentIsWaitedFor) {
  deploy(1, GatewaySettings{});
  cellserve::testing::FakeResponseWriter w;
  std::thread waiter([&] { serve(chat(5), w); });
  ASSERT_TRUE(clock_.await_sleepers(1));  // in the line: no device is connected
  EXPECT_EQ(w.status, 0) << "refused at once: " << w.body;
  FakeReplica& back = device(0, FakeReplica::replies(200, R"({"choices":[{"message":{"content":"moved"}}]})"));
  forwarder_.line("dep").wake();
  waiter.join();
  EXPECT_EQ(w.status, 200) << w.body;
  EXPECT_EQ(back.calls(), 1);

  cellserve::testing::FakeResponseWriter late;
  {
    std::lock_guard lock(devices_mu_);
    devices_.clear();
  }
  std::thread gone([&] { serve(chat(5), late); });
  ASSERT_TRUE(clock_.await_sleepers(1));
  clock_.advance(Gateway::kUnreachableReadyWait - 1ms);
  EXPECT_EQ(late.status, 0);
  clock_.advance(1ms);
  gone.join();
  EXPECT_EQ(late.status, 504);
  EXPECT_NE(late.body.find("within 10000 ms"), std::string::npos) << late.body;
}

// The only replica's transport closes under a request before any answer (its hub died; the
// agent re-dials another): the request waits for the agent to be reachable again and is answered
// by it, instead of "every replica tried failed".
TEST_F(GatewayTest, ARequestWhoseTunnelClosedUnderItIsSentAgainOnceTheAgentIsBack) {
  deploy(1, GatewaySettings{});
  device(0, [this](const net::HttpRequest&, net::ResponseWriter&, bool* responded) {
    if (responded) *responded = false;
    std::lock_guard lock(devices_mu_);
    devices_.erase("p0");  // the tunnel is gone until the agent is back
    return Status::unavailable("tunnel closed: peer closed the connection");
  });
  cellserve::testing::FakeResponseWriter w;
  std::thread waiter([&] { serve(chat(5), w); });
  ASSERT_TRUE(clock_.await_sleepers(1));  // the second attempt waits in the line
  EXPECT_EQ(w.status, 0) << w.body;
  FakeReplica& back = device(0, FakeReplica::replies(200, R"({"choices":[{"message":{"content":"again"}}]})"));
  forwarder_.line("dep").wake();
  waiter.join();
  EXPECT_EQ(w.status, 200) << w.body;
  EXPECT_EQ(back.calls(), 1);
}

TEST_F(GatewayTest, AFullQueueAnswers429AtOnce) {
  GatewaySettings g;
  g.queue_max = 0;
  g.first_byte_timeout_ms = 1000;
  deploy(1, g, /*slots=*/1);
  std::atomic<bool> cut{false};
  FakeReplica& only = device(0, FakeReplica::hangs(cut));
  cellserve::testing::FakeResponseWriter first;
  std::thread holder([&] { serve(chat(5), first); });
  ASSERT_TRUE(only.await_calls(1));  // the first request holds the only slot
  ASSERT_EQ(state_.registry.replicas("dep")[0].in_flight, 1);
  cellserve::testing::FakeResponseWriter second;
  serve(chat(5), second);
  EXPECT_EQ(second.status, 429);
  clock_.advance(1s);
  holder.join();
}

// Quotas are counted in the store (key_book.h): a key whose quota cannot be counted now (here:
// the book counts in no store, as when the database is unreachable) gets 503, at admission and
// at the token hold, and the request never reaches a device.
TEST_F(GatewayTest, AQuotaThatCannotBeCountedIs503AndNeverReachesADevice) {
  deploy(1, GatewaySettings{});
  FakeReplica& only = device(0, FakeReplica::replies(200, R"({"ok":true})"));
  ApiKey k;
  k.hash = KeyBook::hash_of("user-key");
  k.id = k.hash.substr(0, 12);
  k.deployment = "dep";
  k.deployment_created_ms = 1;
  k.tokens_per_day = 1000;
  state_.keys.add(k);
  cellserve::testing::FakeResponseWriter admitted;
  std::string key_id;
  EXPECT_FALSE(user_allowed(state_, chat(5), admitted, "dep", &key_id));
  EXPECT_EQ(admitted.status, 503);
  EXPECT_NE(admitted.body.find("quota_unavailable"), std::string::npos) << admitted.body;
  EXPECT_EQ(admitted.header("Retry-After"), "1");
  cellserve::testing::FakeResponseWriter held;
  gateway_.serve_deployment(chat(5), held, "dep", k.id, "/chat/completions");
  EXPECT_EQ(held.status, 503);
  EXPECT_NE(held.body.find("quota_unavailable"), std::string::npos) << held.body;
  EXPECT_EQ(only.calls(), 0);
}

}  // namespace
}  // namespace cellserve::fleet
