// QuotaStore (quota_store.h) on both engines, with two Store objects on one database (two
// connections, as two hubs hold): counts that never overshoot when hubs count at once, holds
// released by settle() and by removing a hub, and the UTC day rolling over.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "fleet/store/quota_store.h"
#include "tests/fleet/store/store_fixture.h"

namespace cellserve::fleet {
namespace {

using Outcome = QuotaCheck::Outcome;

constexpr int64_t kDay = 24LL * 3600 * 1000;
constexpr int64_t kT0 = 20000 * kDay + 3600 * 1000;  // 01:00 UTC on some day

constexpr QuotaAsk kRequest{.check_rate = true, .count_request = true, .hold_tokens = 0};

QuotaAsk hold_of(int64_t tokens) {
  return QuotaAsk{.check_rate = false, .count_request = false, .hold_tokens = tokens};
}

class QuotaStoreTest : public StoreTest {
 protected:
  void SetUp() override {
    StoreTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    one_ = reopen();
    two_ = reopen();
    ASSERT_NE(one_, nullptr);
    ASSERT_NE(two_, nullptr);
  }
  void add_key(const std::string& id, int rpm, int64_t tokens_per_day) {
    ApiKey k;
    k.id = id;
    k.hash = id + std::string(64 - id.size(), '0');
    k.deployment = "risk";
    k.rpm = rpm;
    k.tokens_per_day = tokens_per_day;
    ASSERT_TRUE(one_->add_api_key(k).ok());
  }
  ApiKey key(const std::string& id) {
    auto keys = two_->api_keys();
    EXPECT_TRUE(keys.ok()) << keys.status().to_string();
    for (const ApiKey& k : keys.ok() ? *keys : std::vector<ApiKey>{}) {
      if (k.id == id) return k;
    }
    ADD_FAILURE() << "no key " << id;
    return {};
  }
  Outcome take(Store& s, const std::string& hub, const QuotaAsk& ask, int64_t now_ms, const std::string& id = "k") {
    auto c = s.quotas().take(id, hub, ask, now_ms);
    EXPECT_TRUE(c.ok()) << c.status().to_string();
    return c.ok() ? c->outcome : Outcome::Unknown;
  }

  std::unique_ptr<Store> one_;
  std::unique_ptr<Store> two_;
};

INSTANTIATE_TEST_SUITE_P(Engines, QuotaStoreTest, ::testing::Values(StoreEngine::Sqlite, StoreEngine::Postgres),
                         store_engine_name);

// 8 threads on two connections hold 50 tokens at a time from a budget of 1,000: exactly 20 holds.
TEST_P(QuotaStoreTest, HoldsFromTwoHubsAtOnceNeverOvershoot) {
  add_key("k", 0, 1000);
  std::atomic<int> granted{0};
  std::atomic<int> failed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      Store& s = t % 2 == 0 ? *one_ : *two_;
      const std::string hub = t % 2 == 0 ? "a" : "b";
      for (int i = 0; i < 10; ++i) {
        auto c = s.quotas().take("k", hub, hold_of(50), kT0);
        if (!c.ok()) {
          ++failed;
        } else if (c->outcome == Outcome::Allowed) {
          ++granted;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(granted.load(), 20);
  auto out = one_->quotas().take("k", "a", hold_of(1), kT0);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->outcome, Outcome::OutOfTokens);
  EXPECT_EQ(out->limit, 1000);
  EXPECT_EQ(out->left, 0);
  EXPECT_EQ(out->retry_after_ms, 23 * 3600 * 1000);
}

// 8 threads on two connections count requests of a 30 rpm key within one minute: exactly 30.
TEST_P(QuotaStoreTest, RequestsFromTwoHubsAtOnceStayWithinTheRate) {
  add_key("k", 30, 0);
  std::atomic<int> allowed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      Store& s = t % 2 == 0 ? *one_ : *two_;
      for (int i = 0; i < 10; ++i) {
        auto c = s.quotas().take("k", t % 2 == 0 ? "a" : "b", kRequest, kT0 + i);
        if (c.ok() && c->outcome == Outcome::Allowed) ++allowed;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(allowed.load(), 30);
  EXPECT_EQ(key("k").requests, 30);
  auto limited = two_->quotas().take("k", "b", kRequest, kT0 + 30'000);
  ASSERT_TRUE(limited.ok());
  EXPECT_EQ(limited->outcome, Outcome::RateLimited);
  EXPECT_EQ(limited->limit, 30);
  EXPECT_EQ(limited->retry_after_ms, 30'000);  // the first request (at kT0) leaves the minute then
  // A check alone counts nothing, and the window slides.
  EXPECT_EQ(take(*one_, "a", QuotaAsk{.check_rate = true, .count_request = false, .hold_tokens = 0}, kT0 + 60'009),
            Outcome::Allowed);
  EXPECT_EQ(take(*one_, "a", kRequest, kT0 + 60'009), Outcome::Allowed);
  EXPECT_EQ(key("k").requests, 31);
}

TEST_P(QuotaStoreTest, SettlingReleasesTheHoldAndCountsTheUseOnItsDay) {
  add_key("k", 0, 100);
  EXPECT_EQ(take(*one_, "a", hold_of(60), kT0), Outcome::Allowed);
  EXPECT_EQ(take(*two_, "b", hold_of(41), kT0), Outcome::OutOfTokens) << "60 held by a";
  EXPECT_EQ(take(*two_, "b", hold_of(40), kT0), Outcome::Allowed);
  EXPECT_EQ(take(*two_, "b", kRequest, kT0), Outcome::OutOfTokens) << "used + held = the quota";
  ASSERT_TRUE(one_->quotas().settle("k", "a", 60, 25, kT0).ok());
  ASSERT_TRUE(one_->quotas().settle("k", "a", 60, 0, kT0).ok());  // again: never below zero, b's untouched
  EXPECT_EQ(take(*one_, "a", hold_of(76), kT0), Outcome::OutOfTokens) << "25 used, 40 held by b";
  EXPECT_EQ(take(*one_, "a", hold_of(35), kT0), Outcome::Allowed);
  ApiKey k = key("k");
  EXPECT_EQ(k.tokens, 25);
  EXPECT_EQ(k.day_tokens, 25);
  EXPECT_EQ(k.day, kT0 / kDay);
  // The next day starts with nothing used; holds of yesterday's requests still count.
  ASSERT_TRUE(two_->quotas().settle("k", "b", 40, 30, kT0 + kDay).ok());
  k = key("k");
  EXPECT_EQ(k.tokens, 55);
  EXPECT_EQ(k.day_tokens, 30);
  EXPECT_EQ(take(*two_, "b", hold_of(36), kT0 + kDay), Outcome::OutOfTokens) << "30 used, 35 held by a";
  EXPECT_EQ(take(*two_, "b", hold_of(35), kT0 + kDay), Outcome::Allowed);
}

TEST_P(QuotaStoreTest, RemovingADeadHubReleasesWhatItsRequestsHeld) {
  add_key("k", 0, 1000);
  ASSERT_TRUE(one_->cluster().heartbeat_hub("a", "https://a").ok());
  EXPECT_EQ(take(*one_, "a", hold_of(600), kT0), Outcome::Allowed);
  EXPECT_EQ(take(*two_, "b", hold_of(300), kT0), Outcome::Allowed);
  EXPECT_EQ(take(*two_, "b", hold_of(200), kT0), Outcome::OutOfTokens);
  ASSERT_TRUE(two_->cluster().remove_hub("a").ok());  // a died; the leader forgets it
  EXPECT_EQ(take(*two_, "b", hold_of(700), kT0), Outcome::Allowed);
  EXPECT_EQ(take(*two_, "b", hold_of(1), kT0), Outcome::OutOfTokens) << "b's own holds stay";
  ASSERT_TRUE(one_->quotas().release_holds("b").ok());
  EXPECT_EQ(take(*one_, "c", hold_of(1000), kT0), Outcome::Allowed);
}

TEST_P(QuotaStoreTest, RevokedAndAbsentKeysAreUnknownAndCountNothing) {
  add_key("k", 5, 100);
  EXPECT_EQ(take(*one_, "a", kRequest, kT0, "absent"), Outcome::Unknown);
  ApiKey k = key("k");
  k.revoked = true;
  ASSERT_TRUE(two_->update_api_key(k).ok());
  EXPECT_EQ(take(*one_, "a", kRequest, kT0), Outcome::Unknown);
  EXPECT_EQ(take(*one_, "a", hold_of(5), kT0), Outcome::Unknown);
  EXPECT_EQ(key("k").requests, 0);
  // A request admitted before the revocation still settles its use.
  ASSERT_TRUE(one_->quotas().settle("k", "a", 0, 7, kT0).ok());
  EXPECT_EQ(key("k").tokens, 7);
  EXPECT_TRUE(one_->quotas().settle("absent", "a", 5, 5, kT0).ok());
}

// The usage a hub flushes never overwrites what the store counted (update_api_key).
TEST_P(QuotaStoreTest, WritingAKeyLeavesItsCountedUsageAlone) {
  add_key("k", 0, 100);
  ASSERT_TRUE(one_->quotas().settle("k", "a", 0, 40, kT0).ok());
  ApiKey stale = key("k");
  ASSERT_TRUE(two_->quotas().settle("k", "b", 0, 2, kT0).ok());
  stale.tokens = 0;
  stale.day_tokens = 0;
  stale.requests = 0;
  stale.deployment_created_ms = 77;
  ASSERT_TRUE(one_->update_api_key(stale).ok());
  const ApiKey k = key("k");
  EXPECT_EQ(k.tokens, 42);
  EXPECT_EQ(k.day_tokens, 42);
  EXPECT_EQ(k.deployment_created_ms, 77);
}

}  // namespace
}  // namespace cellserve::fleet
