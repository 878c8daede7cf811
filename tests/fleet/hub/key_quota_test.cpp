// Two hubs' key books counting one key's quotas in one database (issue 46): requests admitted
// and tokens held by many threads on both at once never exceed the key's rpm or tokens_per_day
// in total. On both engines (store_fixture.h); PostgreSQL is the case several hubs share.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "fleet/hub/key_book.h"
#ifdef CELLSERVE_HAVE_POSTGRES
#include "fleet/store/pg_connection.h"
#endif
#include "tests/fleet/store/store_fixture.h"

namespace cellserve::fleet {
namespace {

using Kind = KeyBook::Check::Kind;
constexpr int64_t kDay = 24LL * 3600 * 1000;
constexpr int64_t kT0 = 20000 * kDay + 3600 * 1000;  // 01:00 UTC on some day
constexpr int64_t kCreated = 1234;

class KeyQuotaTest : public StoreTest {
 protected:
  void SetUp() override {
    StoreTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    for (int hub = 0; hub < 2; ++hub) {
      stores_[hub] = reopen();
      ASSERT_NE(stores_[hub], nullptr);
      books_[hub].count_in(stores_[hub]->quotas(), "hub-" + std::to_string(hub));
    }
  }
  // Creates the key on hub 0, as the admin API does; hub 1 learns of it at its next re-load.
  std::string create(const std::string& secret, int rpm, int64_t tokens_per_day) {
    ApiKey k;
    k.hash = KeyBook::hash_of(secret);
    k.id = k.hash.substr(0, 12);
    k.deployment = "risk";
    k.deployment_created_ms = kCreated;
    k.rpm = rpm;
    k.tokens_per_day = tokens_per_day;
    EXPECT_TRUE(stores_[0]->add_api_key(k).ok());
    books_[0].add(k);
    reload(1);
    return k.id;
  }
  void reload(int hub) {
    auto keys = stores_[hub]->api_keys();
    ASSERT_TRUE(keys.ok()) << keys.status().to_string();
    books_[hub].load(*keys);
  }

  std::unique_ptr<Store> stores_[2];
  KeyBook books_[2];
};

INSTANTIATE_TEST_SUITE_P(Engines, KeyQuotaTest, ::testing::Values(StoreEngine::Sqlite, StoreEngine::Postgres),
                         store_engine_name);

// 8 threads, 4 on each hub, each runs requests as the gateway does: admit, hold its most (100
// tokens), use part of it (30), settle. The key's 2,000 tokens a day bound what is held and used
// at every moment; the store's counts are the sum of every hub's.
TEST_P(KeyQuotaTest, ManyRequestsOnTwoHubsNeverExceedTheDailyTokens) {
  const std::string id = create("tokens", 0, 2000);
  constexpr int kHeld = 100;
  constexpr int kUsed = 30;
  std::atomic<int> ran{0};
  std::atomic<int> out_of_tokens{0};
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      KeyBook& book = books_[t % 2];
      for (int i = 0; i < 25; ++i) {
        const Kind admitted = book.admit("tokens", "risk", kCreated, kT0).kind;
        if (admitted != Kind::Allowed) {
          admitted == Kind::OutOfTokens ? ++out_of_tokens : ++errors;
          continue;
        }
        const Kind held = book.hold(id, kHeld, kT0).kind;
        if (held != Kind::Allowed) {
          held == Kind::OutOfTokens ? ++out_of_tokens : ++errors;
          continue;
        }
        ++ran;
        if (!book.settle(id, kHeld, kUsed, kT0).ok()) ++errors;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(errors.load(), 0);
  reload(0);
  const ApiKey k = books_[0].all()[0];
  EXPECT_EQ(k.day_tokens, int64_t{ran.load()} * kUsed);
  // Every hold fit beside what was used: nothing ran past the quota, and it ran until it was spent
  // (a last request needs all 100 of its tokens free).
  EXPECT_LE(k.day_tokens, 2000);
  EXPECT_GT(k.day_tokens + kHeld, 2000) << ran.load() << " ran";
  EXPECT_GT(out_of_tokens.load(), 0);
  EXPECT_EQ(books_[1].hold(id, 2000 - k.day_tokens + 1, kT0).kind, Kind::OutOfTokens) << "no hold was left behind";
  EXPECT_EQ(books_[1].hold(id, 2000 - k.day_tokens, kT0).kind, Kind::Allowed);
}

// Requests and batch lines on both hubs within one minute: the key's 40 requests per minute in
// total, not 40 per hub.
TEST_P(KeyQuotaTest, TheRateIsOneWindowAcrossHubs) {
  const std::string id = create("rate", 40, 0);
  std::atomic<int> allowed{0};
  std::atomic<int> limited{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      KeyBook& book = books_[t % 2];
      for (int i = 0; i < 15; ++i) {
        const Kind k = t < 4 ? book.admit("rate", "risk", kCreated, kT0 + i * 100).kind
                             : book.admit_line(id, 0, kT0 + i * 100).kind;
        if (k == Kind::Allowed) ++allowed;
        if (k == Kind::RateLimited) ++limited;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(allowed.load(), 40);
  EXPECT_EQ(limited.load(), 8 * 15 - 40);
  EXPECT_FALSE(books_[0].has_room(id, kT0 + 59'000));
  EXPECT_FALSE(books_[1].has_room(id, kT0 + 59'000));
  EXPECT_TRUE(books_[1].has_room(id, kT0 + 61'500)) << "the minute has passed";
  reload(1);
  EXPECT_EQ(books_[1].all()[0].requests, 40);
}

// A key revoked on one hub is refused by the other's next check, before its next re-load.
TEST_P(KeyQuotaTest, ARevocationOnOneHubHoldsOnTheOther) {
  create("gone", 0, 0);
  ASSERT_EQ(books_[1].admit("gone", "risk", kCreated, kT0).kind, Kind::Allowed);
  ASSERT_TRUE(books_[0].revoke(books_[0].all()[0].id));
  for (const ApiKey& k : books_[0].take_changed()) ASSERT_TRUE(stores_[0]->update_api_key(k).ok());
  EXPECT_EQ(books_[1].admit("gone", "risk", kCreated, kT0).kind, Kind::Unknown);
  reload(1);
  EXPECT_TRUE(books_[1].all()[0].revoked);
  EXPECT_FALSE(books_[1].opens("gone", "risk", kCreated));
}

// The database lost (here: the server ends the hubs' sessions, as a restart or failover does): the
// check that finds it is Unavailable, so the hub answers 503 and lets nothing through unchecked;
// the next check reconnects and counts again.
TEST_P(KeyQuotaTest, AQuotaTheDatabaseCannotCountIsUnavailableNeverAllowed) {
#ifdef CELLSERVE_HAVE_POSTGRES
  if (GetParam() != StoreEngine::Postgres) GTEST_SKIP() << "a SQLite file cannot be lost this way";
  const std::string id = create("lost", 5, 1000);
  ASSERT_EQ(books_[0].admit("lost", "risk", kCreated, kT0).kind, Kind::Allowed);
  auto admin = PgConnection::open(location());
  ASSERT_TRUE(admin.ok()) << admin.status().to_string();
  ASSERT_TRUE((*admin)
                  ->exec("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = "
                         "'cellserve-hub' AND pid != pg_backend_pid()")
                  .ok());
  const KeyBook::Check lost = books_[0].admit("lost", "risk", kCreated, kT0);
  EXPECT_EQ(lost.kind, Kind::Unavailable);
  EXPECT_FALSE(lost.error.empty());
  EXPECT_EQ(books_[1].hold(id, 10, kT0).kind, Kind::Unavailable);
  EXPECT_EQ(books_[0].admit("lost", "risk", kCreated, kT0).kind, Kind::Allowed) << "reconnected";
  reload(1);
  EXPECT_EQ(books_[1].all()[0].requests, 2) << "the refused checks counted nothing";
#else
  GTEST_SKIP() << "this build has no PostgreSQL support (CELLSERVE_POSTGRES off)";
#endif
}

}  // namespace
}  // namespace cellserve::fleet

namespace cellserve::fleet {
namespace {

// A key created on hub 0 opens hub 1's endpoint at once: hub 1's miss re-loads the keys (not
// waiting for its next round). Misses re-load at most once per interval, so unknown keys sent
// in a stream cost the store at most one read per interval, not one per request.
TEST_P(KeyQuotaTest, AKeyCreatedOnAnotherHubOpensAtOnceAndMissesAreRateLimited) {
  int reloads = 0;
  books_[1].reload_on_miss(
      [&] {
        ++reloads;
        return stores_[1]->api_keys();
      },
      std::chrono::hours(1));
  ApiKey k;
  k.hash = KeyBook::hash_of("fresh");
  k.id = k.hash.substr(0, 12);
  k.deployment = "risk";
  k.deployment_created_ms = kCreated;
  ASSERT_TRUE(stores_[0]->add_api_key(k).ok());
  books_[0].add(k);
  EXPECT_EQ(books_[1].admit("fresh", "risk", kCreated, kT0).kind, Kind::Allowed);
  EXPECT_EQ(reloads, 1);
  EXPECT_TRUE(books_[1].opens("fresh", "risk", kCreated));
  EXPECT_EQ(reloads, 1) << "a known key reads nothing";
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(books_[1].admit("unknown-" + std::to_string(i), "risk", kCreated, kT0).kind, Kind::Unknown);
  }
  EXPECT_EQ(reloads, 1) << "a hundred unknown keys within the interval: no read";
  EXPECT_FALSE(books_[1].opens("unknown", "risk", kCreated));
  EXPECT_EQ(reloads, 1);
}

}  // namespace
}  // namespace cellserve::fleet
