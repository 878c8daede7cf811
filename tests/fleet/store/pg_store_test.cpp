// What only the PostgreSQL store has: migrations under the advisory lock, URLs with passwords,
// and a connection that breaks. The store contract itself is store_test.cpp's suite.
#include <gtest/gtest.h>
#include <libpq-fe.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "fleet/store/open_store.h"
#include "fleet/store/pg_connection.h"
#include "fleet/store/pg_schema.h"
#include "fleet/store/pg_store.h"
#include "tests/support/postgres_server.h"

namespace cellserve::fleet {
namespace {

class PgStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto server = testing::shared_postgres_server();
    if (!server.ok()) GTEST_SKIP() << server.status().message();
    server_ = *server;
    auto url = server_->create_database();
    ASSERT_TRUE(url.ok()) << url.status().to_string();
    url_ = *url;
  }
  // Runs `sql` on its own connection to the test database; returns the first value, if any.
  std::string query(const std::string& sql) {
    auto conn = PgConnection::open(url_);
    EXPECT_TRUE(conn.ok()) << conn.status().to_string();
    if (!conn.ok()) return "";
    auto r = (*conn)->exec(sql);
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    return r.ok() && r->rows() > 0 ? r->row(0).text(0) : "";
  }

  testing::PostgresServer* server_ = nullptr;
  std::string url_;
};

TEST(PgUrl, PasswordsAreMasked) {
  EXPECT_EQ(mask_postgres_url("postgresql://hub:s3cr%40t@db.example:5432/fleet?sslmode=verify-full"),
            "postgresql://hub:***@db.example:5432/fleet?sslmode=verify-full");
  EXPECT_EQ(mask_postgres_url("postgres://hub@db/fleet?password=hunter2&sslmode=require"),
            "postgres://hub@db/fleet?password=***&sslmode=require");
  EXPECT_EQ(mask_postgres_url("postgresql:///fleet?host=/run/pg"), "postgresql:///fleet?host=/run/pg");
  EXPECT_EQ(mask_postgres_url("host=db user=hub password=hunter2 dbname=fleet"),
            "host=db user=hub password=*** dbname=fleet");
  EXPECT_EQ(store_display_name("postgresql://a:b@h/d"), "postgresql://a:***@h/d");
  EXPECT_EQ(store_display_name("/var/lib/cellserve/hub.db"), "/var/lib/cellserve/hub.db");
}

TEST(PgUrl, OnlyPostgresSchemesArePostgres) {
  EXPECT_TRUE(is_postgres_url("postgresql://h/d"));
  EXPECT_TRUE(is_postgres_url("postgres://h/d"));
  EXPECT_FALSE(is_postgres_url("hub.db"));
  EXPECT_FALSE(is_postgres_url("/data/postgresql/hub.db"));
}

// Nothing listens there: Unavailable, quickly, and the password stays out of the message.
TEST(PgUrl, AnUnreachableServerIsUnavailableWithoutThePassword) {
  auto store = open_store("postgresql://hub:topsecret@127.0.0.1:1/fleet?connect_timeout=2");
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::Unavailable) << store.status().to_string();
  EXPECT_EQ(store.status().message().find("topsecret"), std::string::npos) << store.status().message();
  EXPECT_NE(store.status().message().find("hub:***@127.0.0.1"), std::string::npos) << store.status().message();
}

// Hubs starting at once against a fresh database: each opens it, and the schema is built once.
TEST_F(PgStoreTest, HubsStartingAtOnceMigrateOnce) {
  constexpr int kHubs = 4;
  std::vector<std::thread> hubs;
  std::atomic<int> opened{0};
  std::vector<std::string> failures(kHubs);
  for (int i = 0; i < kHubs; ++i) {
    hubs.emplace_back([&, i] {
      auto store = open_postgres_store(url_);
      if (store.ok()) {
        ++opened;
      } else {
        failures[static_cast<size_t>(i)] = store.status().to_string();
      }
    });
  }
  for (auto& t : hubs) t.join();
  for (const std::string& f : failures) EXPECT_EQ(f, "");
  EXPECT_EQ(opened.load(), kHubs);
  const std::string latest = std::to_string(pg_hub_schema_migrations().size());
  EXPECT_EQ(query("SELECT count(*) FROM cellserve_schema"), latest);
  EXPECT_EQ(query("SELECT max(version) FROM cellserve_schema"), latest);
}

// The start waits for the migration lock: while another session holds it, no hub gets past it.
TEST_F(PgStoreTest, AStartWaitsForTheMigrationLock) {
  auto holder = PgConnection::open(url_);
  ASSERT_TRUE(holder.ok()) << holder.status().to_string();
  PgTransaction held(**holder);
  ASSERT_TRUE(held.begin().ok());
  ASSERT_TRUE(
      (*holder)->exec(std::string("SELECT pg_advisory_xact_lock(") + std::to_string(kPgMigrationLockKey) + ")").ok());
  std::atomic<bool> opened{false};
  std::thread hub([&] { opened = open_postgres_store(url_).ok(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_FALSE(opened.load());
  EXPECT_EQ(query("SELECT count(*) FROM pg_tables WHERE tablename = 'cellserve_schema'"), "0");
  ASSERT_TRUE(held.commit().ok());  // releases the lock
  hub.join();
  EXPECT_TRUE(opened.load());
}

// Without the lock the same start fails: evidence that the test above tests the lock. Each
// thread runs the first migration on its own connection, in a transaction, unlocked.
TEST_F(PgStoreTest, WithoutTheLockConcurrentMigrationsCollide) {
  constexpr int kHubs = 4;
  std::atomic<int> failed{0};
  std::vector<std::thread> hubs;
  for (int i = 0; i < kHubs; ++i) {
    hubs.emplace_back([&] {
      auto conn = PgConnection::open(url_);
      if (!conn.ok()) return;
      PgTransaction tx(**conn);
      if (!tx.begin().ok()) return;
      if (!(*conn)->exec_script(pg_hub_schema_migrations()[0]).ok() || !tx.commit().ok()) ++failed;
    });
  }
  for (auto& t : hubs) t.join();
  EXPECT_EQ(failed.load(), kHubs - 1);
}

TEST_F(PgStoreTest, ASchemaNewerThanTheBuildIsRefused) {
  ASSERT_TRUE(open_postgres_store(url_).ok());
  query("INSERT INTO cellserve_schema (version) VALUES (1000) RETURNING version");
  auto store = open_postgres_store(url_);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::Unimplemented) << store.status().to_string();
}

// The server ends the hub's session (a restart, a failover): the next call reports it, the one
// after reconnects.
TEST_F(PgStoreTest, ABrokenConnectionIsUnavailableThenReconnects) {
  auto store = open_postgres_store(url_);
  ASSERT_TRUE(store.ok()) << store.status().to_string();
  ASSERT_TRUE((*store)->processors().ok());
  query(
      "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = 'cellserve-hub' AND "
      "pid != pg_backend_pid()");
  auto lost = (*store)->processors();
  ASSERT_FALSE(lost.ok());
  EXPECT_EQ(lost.status().code(), StatusCode::Unavailable) << lost.status().to_string();
  auto again = (*store)->processors();
  EXPECT_TRUE(again.ok()) << again.status().to_string();
}

// Many redeemers of a token with few uses, on separate connections (as several hubs): exactly
// the uses are spent.
TEST_F(PgStoreTest, TokenUsesAreSpentExactlyOnceAcrossHubs) {
  constexpr int kHubs = 4;
  constexpr int kUses = 5;
  std::vector<std::unique_ptr<Store>> hubs;
  for (int i = 0; i < kHubs; ++i) {
    auto s = open_postgres_store(url_);
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    hubs.push_back(std::move(s).value());
  }
  ASSERT_TRUE(hubs[0]->add_enrollment_token({std::string(64, 'a'), "t", kUses, 2'000'000'000'000, 1}).ok());
  std::atomic<int> granted{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kHubs; ++i) {
    threads.emplace_back([&, i] {
      for (int k = 0; k < 10; ++k) {
        auto r = hubs[static_cast<size_t>(i)]->redeem_enrollment_token(std::string(64, 'a'), 1'700'000'000'000);
        if (r.ok() && *r) ++granted;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(granted.load(), kUses);
}

}  // namespace
}  // namespace cellserve::fleet
