// SpotChecks behind the Gateway on fake devices and a manual clock: a checked answer goes to a
// second device after the user has it, a disagreement to a third, the odd one loses and is
// quarantined (no more traffic), honest devices never lose; requests that are not reproducible
// are never checked. The checks run on the service's own threads: the test waits for their
// records (bounded, in real time), never for a time.
#include "fleet/hub/spot_checks.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "fleet/hub/gateway.h"
#include "tests/fleet/hub/fake_replica.h"
#include "tests/support/fake_response_writer.h"

namespace cellserve::fleet {
namespace {

namespace fs = std::filesystem;

// A whole chat answer with `text`, whatever the request.
FakeReplica::Answer says(const std::string& text) {
  return FakeReplica::replies(
      200, R"({"choices":[{"index":0,"message":{"role":"assistant","content":")" + text + R"("}}]})");
}

class SpotChecksTest : public ::testing::Test {
 protected:
  SpotChecksTest() : state_(HubOptions{}, clock_) {
    dir_ = fs::temp_directory_path() / ("cs-spotchecks-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    state_.store = std::move(open_sqlite_store((dir_ / "hub.db").string())).value();
    checks_.start();
  }
  ~SpotChecksTest() override {
    checks_.stop();
    state_.store.reset();
    fs::remove_all(dir_);
  }

  // Deployment "dep" with replica i on device "p<i>", each answering `texts[i]`.
  void deploy(const std::vector<std::string>& texts, double fraction) {
    Deployment d;
    d.spec.name = "dep";
    d.spec.replicas = static_cast<int>(texts.size());
    d.spec.engine.parallel = 4;
    d.spec.gateway.verify_fraction = fraction;
    d.created_ms = 1;
    std::vector<Replica> rows;
    for (size_t i = 0; i < texts.size(); ++i) {
      Replica r;
      r.deployment = "dep";
      r.index = static_cast<int>(i);
      r.processor_id = "p" + std::to_string(i);
      r.state = ReplicaState::Ready;
      r.secrets_version = 1;
      rows.push_back(r);
      devices_[r.processor_id] = std::make_shared<FakeReplica>(says(texts[i]));
    }
    state_.registry.refresh({d}, rows, {{"dep", "replica-key"}});
  }
  // One user request; the replica that answered it.
  int ask(const std::string& body) {
    net::HttpRequest req;
    req.method = "POST";
    req.path = "/d/dep/v1/chat/completions";
    req.body = body;
    cellserve::testing::FakeResponseWriter w;
    gateway_.serve_deployment(req, w, "dep", "", "/chat/completions");
    EXPECT_EQ(w.status, 200) << w.body;
    return std::stoi(w.header("X-Cellserve-Replica"));
  }
  static constexpr const char* kGreedy = R"({"messages":[{"role":"user","content":"case"}],"temperature":0})";
  // Waits (bounded, in real time) until device `id` has `checks` recorded.
  bool await_checks(const std::string& id, int64_t checks) {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < give_up) {
      const std::optional<DeviceAgreement> a = state_.agreement.get(id);
      if (a && a->checks >= checks) return true;
      std::this_thread::yield();
    }
    return false;
  }
  DeviceAgreement record(const std::string& id) { return state_.agreement.get(id).value_or(DeviceAgreement{}); }

  ManualClock clock_;
  HubState state_;
  fs::path dir_;
  std::map<std::string, std::shared_ptr<FakeReplica>> devices_;
  ReplicaForwarder forwarder_{state_, [this](const std::string& id, bool) -> std::shared_ptr<ReplicaTransport> {
                                const auto it = devices_.find(id);
                                return it == devices_.end() ? nullptr : it->second;
                              }};
  SpotChecks checks_{state_, forwarder_};
  Gateway gateway_{state_, forwarder_, &checks_};
};

TEST_F(SpotChecksTest, ACannedDeviceLosesEveryTieBreakAndIsQuarantined) {
  // Replica 0 (routing's first choice among equals) answers a fixed text; 1 and 2 are honest.
  deploy({"canned", "honest", "honest"}, 1.0);
  for (int i = 1; i <= kMinDecided; ++i) {
    EXPECT_EQ(ask(kGreedy), 0);  // the user gets the first answer, as always
    ASSERT_TRUE(await_checks("p0", i)) << "check " << i;
    ASSERT_TRUE(await_checks("p2", i));  // the tie-break's record comes last
  }
  const DeviceAgreement canned = record("p0");
  EXPECT_EQ(canned.lost, kMinDecided);
  EXPECT_TRUE(canned.quarantined);
  for (const char* honest : {"p1", "p2"}) {
    EXPECT_EQ(record(honest).lost, 0) << honest;
    EXPECT_EQ(record(honest).agreed, kMinDecided) << honest;
    EXPECT_FALSE(record(honest).quarantined) << honest;
  }
  // Stored, and quarantined: no traffic any more.
  auto stored = state_.store->agreements();
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(stored->size(), 3u);
  const int before = devices_["p0"]->calls();
  for (int i = 0; i < 4; ++i) EXPECT_NE(ask(R"({"messages":[{"role":"user","content":"x"}]})"), 0);
  EXPECT_EQ(devices_["p0"]->calls(), before);
  EXPECT_EQ(forwarder_.routable("dep", {}).size(), 2u);
}

TEST_F(SpotChecksTest, NoThirdDeviceLeavesADisagreementUnresolved) {
  deploy({"one", "other"}, 1.0);
  for (int i = 1; i <= 2 * kMinDecided; ++i) {
    ask(kGreedy);
    ASSERT_TRUE(await_checks("p1", i));
  }
  for (const char* id : {"p0", "p1"}) {
    EXPECT_EQ(record(id).checks, 2 * kMinDecided) << id;
    EXPECT_EQ(record(id).agreed + record(id).lost, 0) << id;  // nobody is blamed without a majority
    EXPECT_FALSE(record(id).quarantined) << id;
  }
}

TEST_F(SpotChecksTest, OnlyReproducibleRequestsAreChecked) {
  deploy({"same", "same"}, 1.0);
  ask(R"({"messages":[{"role":"user","content":"sampled"}]})");
  ask(R"({"messages":[{"role":"user","content":"sampled"}],"temperature":0.7})");
  ask(R"({"messages":[{"role":"user","content":"two"}],"temperature":0,"n":2})");
  ask(R"({"messages":[{"role":"user","content":"seeded"}],"temperature":0.7,"seed":5})");  // checked
  ASSERT_TRUE(await_checks("p1", 1));
  ask(kGreedy);  // checked
  ASSERT_TRUE(await_checks("p1", 2));
  EXPECT_EQ(devices_["p1"]->calls(), 2);  // only the two checks: routing sent every user request to p0
  EXPECT_EQ(record("p0").agreed, 2);
}

}  // namespace
}  // namespace cellserve::fleet
