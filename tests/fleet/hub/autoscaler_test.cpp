// The hub's Autoscaler (fleet/hub/autoscaler.h) over a real SQLite store, a leading
// ClusterMember and a manual clock: a [[schedule]] window raises the deployment and, once past,
// the idle replicas go; a batch's measured rate sizes the deployment to its deadline; a rise that
// max_replicas stops is recorded once. The events are read back from the store.
#include "fleet/hub/autoscaler.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "fleet/crypto/identity.h"
#include "fleet/store/open_store.h"

namespace cellserve::fleet {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr int64_t kMidnight = 1'796'601'600'000;  // 2026-12-07 00:00 UTC

class AutoscalerTest : public ::testing::Test {
 protected:
  AutoscalerTest() : clock_(kMidnight + 30 * 60'000), state_(HubOptions{}, clock_) {}

  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("cs-autoscaler-" + random_hex(6));
    fs::create_directories(dir_);
    auto store = open_store((dir_ / "hub.db").string());
    ASSERT_TRUE(store.ok()) << store.status().to_string();
    state_.store = std::move(*store);
    state_.member = std::make_unique<ClusterMember>(state_.store->cluster(), clock_, 1s, [](const std::string&) {});
    state_.member->set_peer_url("http://127.0.0.1:1");
    ASSERT_TRUE(state_.member->heartbeat().ok());
    ASSERT_TRUE(state_.member->lead());
    for (int i = 0; i < 10; ++i) {
      Processor p;
      p.id = "p" + std::to_string(i);
      p.name = p.id;
      p.price_per_day = 1;
      p.simulated = true;
      p.online = true;
      p.registered_ms = 1;
      ASSERT_TRUE(state_.store->upsert_processor(p).ok());
    }
  }
  void TearDown() override {
    state_.member.reset();
    state_.store.reset();
    fs::remove_all(dir_);
  }

  void deploy(const AutoscaleSettings& autoscale) {
    Deployment d;
    d.spec.name = "dep";
    d.spec.model_url = "http://127.0.0.1:9/m.gguf";
    d.spec.model_sha256 = std::string(64, 'a');
    d.spec.max_price_per_day = 2;
    d.spec.engine.simulated = true;
    d.spec.autoscale = autoscale;
    d.spec.replicas = autoscale.min_replicas;
    d.created_ms = kMidnight;
    ASSERT_TRUE(state_.store->create_deployment(d).ok());
  }
  // Each row without a device gets the next free one and is Ready (what matching and the agents
  // would do).
  void serve_all() {
    std::lock_guard lock(state_.state_mu);
    auto rows = state_.store->replicas("dep");
    ASSERT_TRUE(rows.ok());
    std::set<std::string> busy;
    for (const Replica& r : *rows) busy.insert(r.processor_id);
    int next = 0;
    for (Replica r : *rows) {
      if (!r.processor_id.empty()) continue;
      while (busy.contains("p" + std::to_string(next))) ++next;
      r.processor_id = "p" + std::to_string(next++);
      r.price_per_day = 1;
      r.state = ReplicaState::Ready;
      r.secrets_version = 1;
      ASSERT_TRUE(state_.store->update_replica(r, state_.now_ms()).ok());
    }
    state_.refresh_registry();
  }
  // One leader round; the deployment's replica count after it.
  int round() {
    EXPECT_TRUE(state_.member->lead());  // renewed each round, as the reconcile loop does
    std::lock_guard lock(state_.state_mu);
    auto deployments = state_.store->deployments();
    auto processors = state_.store->processors();
    EXPECT_TRUE(deployments.ok() && processors.ok());
    autoscaler_.round(*deployments, *processors, state_.now_ms());
    state_.refresh_registry();
    auto d = state_.store->deployment("dep");
    return d.ok() && d->has_value() ? (*d)->spec.replicas : -1;
  }
  // A batch of deployment "dep" made now, in progress with `total` lines and none ended.
  Batch in_progress(const std::string& id, int total) const {
    Batch b;
    b.id = id;
    b.deployment = "dep";
    b.deployment_created_ms = kMidnight;
    b.status = BatchStatus::InProgress;
    b.created_ms = state_.now_ms();
    b.expires_ms = b.created_ms + 24 * 3600'000;
    b.total = total;
    return b;
  }
  std::vector<ScalingEvent> events() {
    auto e = state_.store->scaling_events().latest("dep", 100);
    EXPECT_TRUE(e.ok());
    return e.ok() ? *e : std::vector<ScalingEvent>{};
  }

  fs::path dir_;
  ManualClock clock_;
  HubState state_;
  ReplicaForwarder forwarder_{state_, [](const std::string&, bool) { return nullptr; }};
  std::vector<Batch> batches_;
  Autoscaler autoscaler_{state_, forwarder_, [this] { return Result<std::vector<Batch>>(batches_); }};
};

TEST_F(AutoscalerTest, AScheduleWindowScalesUpAndOnceItPassedTheIdleReplicasGo) {
  AutoscaleSettings a;
  a.min_replicas = 1;
  a.max_replicas = 5;
  a.cooldown_s = 60;
  a.schedules = {{"0 1 * * *", 3, 3600}};
  deploy(a);
  serve_all();
  EXPECT_EQ(round(), 1) << "00:30: the window has not opened";
  clock_.advance(30min);
  EXPECT_EQ(round(), 3) << "01:00: it opens";
  serve_all();
  clock_.advance(59min);
  EXPECT_EQ(round(), 3) << "01:59: still open, however idle";
  clock_.advance(1min);
  EXPECT_EQ(round(), 1) << "02:00: closed, and idle since 01:59 (cooldown_s): back to min_replicas";
  auto rows = state_.store->replicas("dep");
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 3u);
  EXPECT_FALSE((*rows)[0].draining);
  EXPECT_TRUE((*rows)[1].draining) << "removed rows drain first";
  EXPECT_TRUE((*rows)[2].draining);
  const std::vector<ScalingEvent> e = events();
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[1].action, "scale_up");
  EXPECT_EQ(e[1].at_ms, kMidnight + 3600'000);
  EXPECT_EQ(e[1].reason, "schedule '0 1 * * *' until 02:00 UTC asks for 3 replicas");
  EXPECT_EQ(e[0].action, "scale_down");
  EXPECT_EQ(e[0].from_replicas, 3);
  EXPECT_EQ(e[0].to_replicas, 1);
  EXPECT_EQ(e[0].reason, "2 replica(s) idle for cooldown_s 60.0 s");
}

TEST_F(AutoscalerTest, ABatchsMeasuredRateSizesTheDeploymentToItsDeadline) {
  AutoscaleSettings a;
  a.min_replicas = 1;
  a.max_replicas = 20;
  a.batch_deadline_s = 3600;
  deploy(a);
  serve_all();
  batches_ = {in_progress("batch_x", 3600)};
  EXPECT_EQ(round(), 1) << "no rate yet";
  clock_.advance(59s);
  batches_[0].completed = 59;
  EXPECT_EQ(round(), 1) << "not a whole minute measured yet";
  clock_.advance(1s);
  batches_[0].completed = 60;  // one line a second on one replica
  // 3540 lines in 3540 s at 1 line/s per replica, with the 10 % margin: 2 replicas.
  EXPECT_EQ(round(), 2);
  const std::vector<ScalingEvent> e = events();
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].reason,
            "batch batch_x: 3540 lines left would end about 01:30 UTC at 1 replicas, after its deadline 01:30 UTC; it "
            "needs 2");
  // Replicas that look idle stay while the batch has lines left and its rate on two replicas is
  // not measured yet (the samples started again when the second one became ready).
  serve_all();
  clock_.advance(10min);
  batches_[0].completed = 610;
  EXPECT_EQ(round(), 2);
  // Lines that came quicker in the last minute (7 a second on two replicas) let one go: 2570 lines
  // by 01:30 need one replica at 3.5 lines/s.
  clock_.advance(1min);
  batches_[0].completed = 1030;
  EXPECT_EQ(round(), 1);
}

TEST_F(AutoscalerTest, ARiseThatMaxReplicasStopsIsRecordedOnce) {
  AutoscaleSettings a;
  a.min_replicas = 1;
  a.max_replicas = 2;
  a.batch_deadline_s = 600;
  deploy(a);
  serve_all();
  batches_ = {in_progress("batch_y", 100000)};
  round();
  clock_.advance(60s);
  batches_[0].completed = 60;
  EXPECT_EQ(round(), 2);
  serve_all();
  for (int i = 0; i < 5; ++i) {
    clock_.advance(61s);
    batches_[0].completed += 122;
    EXPECT_EQ(round(), 2);
  }
  const std::vector<ScalingEvent> e = events();
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[1].action, "scale_up");
  EXPECT_NE(e[1].reason.find("; max_replicas 2 reached"), std::string::npos) << e[1].reason;
  EXPECT_EQ(e[0].action, "held");
  EXPECT_EQ(e[0].to_replicas, 2);
}

// With several hubs the leader counts the requests waiting at the others too: a peer's report of
// a queue past target_wait_s adds a replica, and a report older than kPeerQueueMaxAge counts no
// more.
TEST_F(AutoscalerTest, RequestsWaitingAtAnotherHubCount) {
  AutoscaleSettings a;
  a.min_replicas = 1;
  a.max_replicas = 3;
  a.target_wait_s = 10;
  deploy(a);
  serve_all();
  state_.peer_queues.put("hub-b", {{"dep", 4, 9000}});
  EXPECT_EQ(round(), 1) << "9 s: within the target";
  state_.peer_queues.put("hub-b", {{"dep", 5, 12000}});
  EXPECT_EQ(round(), 2);
  EXPECT_EQ(events()[0].reason, "queue wait 12.0 s > target_wait_s 10.0 (5 waiting)");
  serve_all();
  clock_.advance(Autoscaler::kPeerQueueMaxAge + 1ms);
  EXPECT_EQ(round(), 2) << "the report went stale: nothing waits any more";
  EXPECT_EQ(events().size(), 1u);
}

}  // namespace
}  // namespace cellserve::fleet
