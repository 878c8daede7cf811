// The key book's quotas: a sliding one-minute request window and a UTC-day token budget that
// requests in flight together cannot overshoot (each holds its most until it settles), counted in
// the hub's store (here SQLite in memory; key_quota_test.cpp runs two books on one database).
#include "fleet/hub/key_book.h"

#include <gtest/gtest.h>

#include "fleet/store/open_store.h"

namespace cellserve::fleet {
namespace {

using Kind = KeyBook::Check::Kind;
constexpr int64_t kDay = 24LL * 3600 * 1000;
constexpr int64_t kT0 = 20000 * kDay + 3600 * 1000;  // 01:00 UTC on some day
constexpr int64_t kCreated = 1234;                   // the deployment's created_ms

ApiKey key_for(const std::string& secret, int rpm, int64_t tokens_per_day) {
  ApiKey k;
  k.hash = KeyBook::hash_of(secret);
  k.id = k.hash.substr(0, 12);
  k.deployment = "risk";
  k.deployment_created_ms = kCreated;
  k.rpm = rpm;
  k.tokens_per_day = tokens_per_day;
  return k;
}

// A book counting in a store of its own, as the hub's does; add() stores a key as the admin API
// does, and stored() re-loads the book as the hub does each round, so all() shows the usage.
class KeyBookTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto opened = open_store(":memory:");
    ASSERT_TRUE(opened.ok()) << opened.status().to_string();
    store_ = std::move(opened).value();
    book.count_in(store_->quotas(), "hub-1");
  }
  void add(const ApiKey& k) {
    ASSERT_TRUE(store_->add_api_key(k).ok());
    book.add(k);
  }
  std::vector<ApiKey> stored() {
    auto keys = store_->api_keys();
    EXPECT_TRUE(keys.ok()) << keys.status().to_string();
    book.load(keys.ok() ? *keys : std::vector<ApiKey>{});
    return book.all();
  }
  void settle(const std::string& id, int64_t held, int64_t used, int64_t now_ms) {
    const Status s = book.settle(id, held, used, now_ms);
    EXPECT_TRUE(s.ok()) << s.to_string();
  }

  std::unique_ptr<Store> store_;
  KeyBook book;
};

TEST_F(KeyBookTest, TheRateIsASlidingMinute) {
  EXPECT_FALSE(book.any());
  add(key_for("k1", 2, 0));
  EXPECT_TRUE(book.any());
  EXPECT_EQ(book.admit("k1", "risk", kCreated, kT0).kind, Kind::Allowed);
  EXPECT_EQ(book.admit("k1", "risk", kCreated, kT0 + 30000).kind, Kind::Allowed);
  const KeyBook::Check limited = book.admit("k1", "risk", kCreated, kT0 + 40000);
  EXPECT_EQ(limited.kind, Kind::RateLimited);
  EXPECT_EQ(limited.retry_after_s, 20);  // the first request leaves the window at kT0 + 60 s
  EXPECT_EQ(book.admit("k1", "risk", kCreated, kT0 + 60000).kind, Kind::Allowed);
  EXPECT_EQ(book.admit("k1", "risk", kCreated, kT0 + 60001).kind, Kind::RateLimited);
  EXPECT_EQ(stored()[0].requests, 3) << "refused requests are not counted";
}

TEST_F(KeyBookTest, TokensPerDayResetAtMidnightUtc) {
  add(key_for("k2", 0, 100));
  const std::string id = book.all()[0].id;
  EXPECT_EQ(book.admit("k2", "risk", kCreated, kT0).kind, Kind::Allowed);
  settle(id, 0, 99, kT0);
  EXPECT_EQ(book.admit("k2", "risk", kCreated, kT0).kind, Kind::Allowed);
  settle(id, 0, 5, kT0);
  const KeyBook::Check out = book.admit("k2", "risk", kCreated, kT0 + 1000);
  EXPECT_EQ(out.kind, Kind::OutOfTokens);
  EXPECT_EQ(out.retry_after_s, 23 * 3600 - 1);
  EXPECT_EQ(book.admit("k2", "risk", kCreated, kT0 + 23 * 3600 * 1000).kind, Kind::Allowed) << "a new day";
  EXPECT_EQ(stored()[0].tokens, 104);
  EXPECT_EQ(stored()[0].day_tokens, 0);
}

// What uploads and batches ask of a key, without counting a request: whether it opens the
// deployment (a spooled upload), and whether it has tokens left today (a batch's next line).
TEST_F(KeyBookTest, OpensAndHasRoomCountNothing) {
  add(key_for("k3", 1, 10));
  const std::string id = book.all()[0].id;
  EXPECT_TRUE(book.opens("k3", "risk", kCreated));
  EXPECT_FALSE(book.opens("k3", "other", kCreated));
  EXPECT_FALSE(book.opens("nope", "risk", kCreated));
  EXPECT_FALSE(book.opens("", "risk", kCreated));
  EXPECT_TRUE(book.has_room(id, kT0));
  EXPECT_EQ(stored()[0].requests, 0);
  EXPECT_EQ(book.admit("k3", "risk", kCreated, kT0).kind, Kind::Allowed) << "its one request a minute is still there";
  EXPECT_FALSE(book.has_room(id, kT0 + 1)) << "no request left this minute";
  settle(id, 0, 10, kT0);
  EXPECT_FALSE(book.has_room(id, kT0 + 60001)) << "no token left today";
  EXPECT_TRUE(book.has_room(id, kT0 + kDay)) << "a new day";
  EXPECT_FALSE(book.has_room("no-such-id", kT0));
  ASSERT_TRUE(book.revoke(id));
  EXPECT_FALSE(book.has_room(id, kT0 + kDay));
  EXPECT_FALSE(book.opens("k3", "risk", kCreated));
}

TEST_F(KeyBookTest, UnknownRevokedAndOtherDeploymentsAreRefused) {
  add(key_for("k3", 0, 0));
  EXPECT_EQ(book.admit("nope", "risk", kCreated, kT0).kind, Kind::Unknown);
  EXPECT_EQ(book.admit("", "risk", kCreated, kT0).kind, Kind::Unknown);
  EXPECT_EQ(book.admit(std::string(300, 'k'), "risk", kCreated, kT0).kind, Kind::Unknown);
  const KeyBook::Check other = book.admit("k3", "fraud", kCreated, kT0);
  EXPECT_EQ(other.kind, Kind::OtherDeployment);
  EXPECT_EQ(other.deployment, "risk");
  EXPECT_EQ(stored()[0].requests, 0) << "nothing was counted";
  EXPECT_EQ(book.admit("k3", "risk", kCreated, kT0).kind, Kind::Allowed);
  EXPECT_EQ(stored()[0].requests, 1);
  EXPECT_EQ(book.take_changed().size(), 0u) << "counting changes nothing the hub must write";
  EXPECT_FALSE(book.revoke("zzz"));
  const std::string id = book.all()[0].id;
  EXPECT_TRUE(book.revoke(id));
  EXPECT_EQ(book.admit("k3", "risk", kCreated, kT0).kind, Kind::Unknown);
  EXPECT_TRUE(stored()[0].revoked) << "a re-load keeps a revocation not yet written";
  const std::vector<ApiKey> changed = book.take_changed();
  ASSERT_EQ(changed.size(), 1u);
  EXPECT_TRUE(changed[0].revoked);
}

// Keys revoked on another hub sharing the store: this hub's store checks refuse them at once,
// and its next re-load shows them revoked.
TEST_F(KeyBookTest, AKeyRevokedInTheStoreIsRefusedBeforeTheNextLoad) {
  add(key_for("k9", 5, 100));
  const std::string id = book.all()[0].id;
  ASSERT_EQ(book.admit("k9", "risk", kCreated, kT0).kind, Kind::Allowed);
  ApiKey revoked = book.all()[0];
  revoked.revoked = true;
  ASSERT_TRUE(store_->update_api_key(revoked).ok());  // another hub's revocation
  EXPECT_EQ(book.admit("k9", "risk", kCreated, kT0).kind, Kind::Unknown);
  EXPECT_EQ(book.hold(id, 10, kT0).kind, Kind::Unknown);
  EXPECT_EQ(book.admit_line(id, 10, kT0).kind, Kind::Unknown);
  EXPECT_FALSE(book.has_room(id, kT0));
  EXPECT_TRUE(stored()[0].revoked);
  ApiKey revived = revoked;
  revived.revoked = false;  // a hub that has not seen the revocation writes its binding
  ASSERT_TRUE(store_->update_api_key(revived).ok());
  EXPECT_TRUE(stored()[0].revoked) << "a revocation is never undone";
}

// A check the store cannot make is Unavailable (the hub answers 503), never Allowed.
TEST(KeyBook, WithoutAStoreNothingIsLetThrough) {
  KeyBook book;
  ApiKey k = key_for("k10", 5, 100);
  book.add(k);
  const KeyBook::Check c = book.admit("k10", "risk", kCreated, kT0);
  EXPECT_EQ(c.kind, Kind::Unavailable);
  EXPECT_FALSE(c.error.empty());
  EXPECT_EQ(book.hold(k.id, 10, kT0).kind, Kind::Unavailable);
  EXPECT_EQ(book.admit_line(k.id, 10, kT0).kind, Kind::Unavailable);
  EXPECT_FALSE(book.has_room(k.id, kT0));
  EXPECT_EQ(book.settle(k.id, 10, 1, kT0).code(), StatusCode::Unavailable);
}

// Issue 43 item 7: 32 requests admitted together each hold their most, so only as many as the
// quota covers get in; each settles to what it used and the hold is freed for the next.
TEST_F(KeyBookTest, HeldTokensStopParallelRequestsFromOvershooting) {
  add(key_for("k4", 0, 1000));
  const std::string id = book.all()[0].id;
  int held = 0;
  for (int i = 0; i < 32; ++i) {
    ASSERT_EQ(book.admit("k4", "risk", kCreated, kT0).kind, Kind::Allowed) << "nothing is used yet";
    const KeyBook::Check c = book.hold(id, 300, kT0);
    if (c.kind == Kind::Allowed) {
      ++held;
    } else {
      EXPECT_EQ(c.kind, Kind::OutOfTokens);
      EXPECT_EQ(c.limit, 1000);
      EXPECT_EQ(c.left, 100);
    }
  }
  EXPECT_EQ(held, 3) << "3 x 300 fit in 1000, a fourth does not";
  EXPECT_EQ(book.admit("k4", "risk", kCreated, kT0).kind, Kind::Allowed) << "100 tokens are neither used nor held";
  settle(id, 300, 40, kT0);  // one used 40 of its 300
  EXPECT_EQ(book.hold(id, 300, kT0).kind, Kind::Allowed) << "its unused 260 came back";
  settle(id, 300, 0, kT0);  // one failed before any answer: nothing counted
  settle(id, 300, 300, kT0);
  settle(id, 300, 300, kT0);
  EXPECT_EQ(stored()[0].day_tokens, 640);
  EXPECT_EQ(stored()[0].tokens, 640);
  EXPECT_EQ(book.hold(id, 361, kT0).kind, Kind::OutOfTokens);
  EXPECT_EQ(book.hold(id, 360, kT0).kind, Kind::Allowed);
  EXPECT_EQ(book.admit("k4", "risk", kCreated, kT0).kind, Kind::OutOfTokens) << "used + held = the quota";
  settle(id, 360, 10, kT0 + kDay);  // it ended on the next day: counted there, hold released
  EXPECT_EQ(stored()[0].day_tokens, 10);
  EXPECT_EQ(book.hold(id, 990, kT0 + kDay).kind, Kind::Allowed);
}

TEST_F(KeyBookTest, AKeyWithoutATokenQuotaHoldsNothing) {
  add(key_for("k5", 0, 0));
  const std::string id = book.all()[0].id;
  EXPECT_EQ(book.hold(id, int64_t{1} << 40, kT0).kind, Kind::Allowed);
  settle(id, int64_t{1} << 40, 7, kT0);
  EXPECT_EQ(stored()[0].tokens, 7);
  EXPECT_EQ(book.hold("no-such-id", 1, kT0).kind, Kind::Unknown);
  ASSERT_TRUE(book.revoke(id));
  EXPECT_EQ(book.hold(id, 1, kT0).kind, Kind::Unknown) << "a revoked key holds nothing";
  settle(id, 0, 3, kT0);  // a request admitted before the revocation still counts
  EXPECT_EQ(stored()[0].tokens, 10);
}

// Issue 43 item 14: a batch's lines count against the key's rate like requests, and hold tokens.
TEST_F(KeyBookTest, BatchLinesCountAgainstTheRateAndHoldTokens) {
  add(key_for("k6", 2, 100));
  const std::string id = book.all()[0].id;
  EXPECT_EQ(book.admit_line(id, 60, kT0).kind, Kind::Allowed);
  EXPECT_EQ(book.admit_line(id, 60, kT0).kind, Kind::OutOfTokens) << "60 held, 40 left";
  EXPECT_EQ(book.admit_line(id, 40, kT0).kind, Kind::Allowed);
  EXPECT_EQ(stored()[0].requests, 2);
  settle(id, 60, 1, kT0);
  settle(id, 40, 1, kT0);
  const KeyBook::Check limited = book.admit_line(id, 1, kT0 + 1000);
  EXPECT_EQ(limited.kind, Kind::RateLimited) << "two lines this minute";
  EXPECT_FALSE(book.has_room(id, kT0 + 1000));
  EXPECT_EQ(book.admit("k6", "risk", kCreated, kT0 + 1000).kind, Kind::RateLimited) << "one window for both";
  EXPECT_TRUE(book.has_room(id, kT0 + 60000));
  EXPECT_EQ(book.admit_line(id, 1, kT0 + 60000).kind, Kind::Allowed);
}

// Issue 43 item 4: a key is bound to its deployment's identity (name and creation time).
TEST_F(KeyBookTest, AKeyOpensOnlyTheDeploymentItWasCreatedFor) {
  add(key_for("k7", 0, 0));
  EXPECT_EQ(book.admit("k7", "risk", kCreated + 1, kT0).kind, Kind::Unknown) << "risk deleted and created again";
  EXPECT_FALSE(book.opens("k7", "risk", kCreated + 1));
  EXPECT_EQ(book.revoke_deployment("other").size(), 0u);
  EXPECT_EQ(book.revoke_deployment("risk").size(), 1u);
  EXPECT_EQ(book.admit("k7", "risk", kCreated, kT0).kind, Kind::Unknown) << "revoked with its deployment";
  EXPECT_TRUE(book.take_changed()[0].revoked);

  ApiKey old = key_for("k8", 0, 0);
  old.deployment_created_ms = 0;  // stored before keys carried the creation time
  add(old);
  EXPECT_EQ(book.admit("k8", "risk", kCreated, kT0).kind, Kind::Unknown);
  book.bind_unbound("risk", kCreated);
  EXPECT_EQ(book.admit("k8", "risk", kCreated, kT0).kind, Kind::Allowed);
}

}  // namespace
}  // namespace cellserve::fleet
