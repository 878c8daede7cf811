// What only the PostgreSQL batch store has: hubs sharing one database. Its schema is versioned
// apart from the hub Store's in the same database; two hubs leasing the same batch at once never
// take one line twice, and of two ends of one line only one counts. The contract itself is
// batch_store_test.cpp's suite.
#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <thread>
#include <vector>

#include "fleet/batch/open_batch_store.h"
#include "fleet/batch/pg_batch_schema.h"
#include "fleet/store/open_store.h"
#include "fleet/store/pg_connection.h"
#include "fleet/store/pg_schema.h"
#include "tests/support/postgres_server.h"

namespace cellserve::fleet {
namespace {

class PgBatchStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto server = testing::shared_postgres_server();
    if (!server.ok()) GTEST_SKIP() << server.status().message();
    auto url = (*server)->create_database();
    ASSERT_TRUE(url.ok()) << url.status().to_string();
    url_ = *url;
  }
  std::unique_ptr<BatchStore> open_hub() {
    auto s = open_batch_store(url_);
    EXPECT_TRUE(s.ok()) << s.status().to_string();
    return s.ok() ? std::move(s).value() : nullptr;
  }
  // Runs `sql` on its own connection; returns the first value, if any.
  std::string query(const std::string& sql) {
    auto conn = PgConnection::open(url_);
    EXPECT_TRUE(conn.ok()) << conn.status().to_string();
    if (!conn.ok()) return "";
    auto r = (*conn)->exec(sql);
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    return r.ok() && r->rows() > 0 ? r->row(0).text(0) : "";
  }
  // A batch of `n` pending lines, in progress.
  Batch started(BatchStore& store, int n) {
    Batch b;
    b.id = "batch_shared";
    b.deployment = "risk";
    b.created_ms = 1000;
    EXPECT_TRUE(store.create_batch(b, {}).ok());
    std::vector<BatchLine> lines;
    for (int i = 1; i <= n; ++i) {
      BatchLine l;
      l.line = i;
      l.custom_id = "case-" + std::to_string(i);
      lines.push_back(l);
    }
    b.in_progress_ms = 2000;
    auto ok = store.start_batch(b, lines);
    EXPECT_TRUE(ok.ok() && *ok);
    return b;
  }

  std::string url_;
};

TEST_F(PgBatchStoreTest, ItsSchemaIsVersionedApartFromTheHubStoresInOneDatabase) {
  auto hub = open_store(url_);
  ASSERT_TRUE(hub.ok()) << hub.status().to_string();
  auto batches = open_hub();
  ASSERT_NE(batches, nullptr);
  auto again = open_hub();  // a second hub: nothing left to migrate
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(query(std::string("SELECT count(*) FROM ") + kPgBatchSchemaTable),
            std::to_string(pg_batch_schema_migrations().size()));
  EXPECT_EQ(query(std::string("SELECT count(*) FROM ") + kPgHubSchemaTable),
            std::to_string(pg_hub_schema_migrations().size()));
}

TEST_F(PgBatchStoreTest, HubsLeasingOneBatchAtOnceNeverTakeALineTwice) {
  constexpr int kHubs = 4;
  constexpr int kLines = 200;
  std::vector<std::unique_ptr<BatchStore>> hubs;
  for (int i = 0; i < kHubs; ++i) hubs.push_back(open_hub());
  for (const auto& h : hubs) ASSERT_NE(h, nullptr);
  const Batch b = started(*hubs[0], kLines);
  std::vector<std::vector<int>> taken(kHubs);
  std::vector<std::string> failures(kHubs);
  std::vector<std::thread> threads;
  for (int i = 0; i < kHubs; ++i) {
    threads.emplace_back([&, i] {
      while (true) {
        auto leased =
            hubs[static_cast<size_t>(i)]->lease_lines(b.id, 7, LeaseTerms{"hub-" + std::to_string(i), 3000, 60000});
        if (!leased.ok()) {
          failures[static_cast<size_t>(i)] = leased.status().to_string();
          return;
        }
        if (leased->empty()) return;
        for (const BatchLine& l : *leased) {
          taken[static_cast<size_t>(i)].push_back(l.line);
          auto ended = hubs[static_cast<size_t>(i)]->end_line(l, LeaseTerms{"hub-" + std::to_string(i), 3001, 60000},
                                                              LineState::Done, "r", "dev");
          if (!ended.ok() || !*ended)
            failures[static_cast<size_t>(i)] = "line " + std::to_string(l.line) + " did not end";
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (const std::string& f : failures) EXPECT_EQ(f, "");
  std::multiset<int> all;
  for (const auto& t : taken) all.insert(t.begin(), t.end());
  EXPECT_EQ(all.size(), static_cast<size_t>(kLines));
  EXPECT_EQ(std::set<int>(all.begin(), all.end()).size(), static_cast<size_t>(kLines)) << "a line was leased twice";
  EXPECT_EQ((**hubs[0]->batch(b.id)).completed, kLines);
}

TEST_F(PgBatchStoreTest, OfTwoHubsEndingOneLineOnlyOneCounts) {
  auto a = open_hub();
  auto b = open_hub();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  const Batch batch = started(*a, 1);
  // One lease ended twice at once (the same holder and attempt through two connections).
  const LeaseTerms lease{"hub-a", 3000, 60000};
  auto leased = a->lease_lines(batch.id, 1, lease);
  ASSERT_EQ(leased->size(), 1u);
  const BatchLine l = (*leased)[0];
  std::atomic<int> ended{0};
  std::thread first([&] { ended += *a->end_line(l, lease, LineState::Done, "from a", "dev-a") ? 1 : 0; });
  std::thread second([&] { ended += *b->end_line(l, lease, LineState::Failed, "from b", "dev-b") ? 1 : 0; });
  first.join();
  second.join();
  EXPECT_EQ(ended.load(), 1);
  const Batch now = **a->batch(batch.id);
  EXPECT_EQ(now.completed + now.failed, 1);
}

}  // namespace
}  // namespace cellserve::fleet
