// The batch store suite's fixture, shared by its files: each test gets an empty store of its own
// on SQLite and on a private PostgreSQL server (skipped without its binaries or without
// CELLSERVE_POSTGRES); open() opens the same store again, as a restarted (or a second) hub would.
#pragma once

#include <filesystem>

#include <gtest/gtest.h>

#include "fleet/batch/batch_store.h"
#include "fleet/batch/open_batch_store.h"
#include "fleet/crypto/identity.h"
#ifdef CELLSERVE_HAVE_POSTGRES
#include "tests/support/postgres_server.h"
#endif

namespace cellserve::fleet {

namespace fs = std::filesystem;

enum class BatchEngine { Sqlite, Postgres };

inline void PrintTo(BatchEngine e, std::ostream* os) { *os << (e == BatchEngine::Sqlite ? "SQLite" : "PostgreSQL"); }

inline std::string batch_engine_name(const ::testing::TestParamInfo<BatchEngine>& info) {
  return info.param == BatchEngine::Sqlite ? "Sqlite" : "Postgres";
}

// Each test gets an empty store of its own (batch.db in a temp folder, or a fresh database on the
// private PostgreSQL server); open() opens it again as a restarted hub would.
class BatchStoreTest : public ::testing::TestWithParam<BatchEngine> {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("cs-batchstore-" + random_hex(6));
    fs::create_directories(dir_);
    location_ = (dir_ / "batch.db").string();
    if (GetParam() == BatchEngine::Postgres) {
#ifdef CELLSERVE_HAVE_POSTGRES
      auto server = testing::shared_postgres_server();
      if (!server.ok()) GTEST_SKIP() << server.status().message();
      auto url = (*server)->create_database();
      ASSERT_TRUE(url.ok()) << url.status().to_string();
      location_ = *url;
#else
      GTEST_SKIP() << "this build has no PostgreSQL support (CELLSERVE_POSTGRES off)";
#endif
    }
    store_ = open();
  }
  void TearDown() override {
    store_.reset();
    fs::remove_all(dir_);
  }
  std::unique_ptr<BatchStore> open() {
    auto s = open_batch_store(location_);
    EXPECT_TRUE(s.ok()) << s.status().message();
    return s.ok() ? std::move(s).value() : nullptr;
  }
  // A validated batch of `n` lines, in progress.
  Batch started(int n) { return started(*store_, n); }
  Batch started(BatchStore& store, int n) {
    Batch b;
    b.id = "batch_" + random_hex(12);
    b.deployment = "risk";
    b.endpoint = "/v1/chat/completions";
    b.input_file_id = "file-abc";
    b.created_ms = 1000;
    b.expires_ms = 1000 + 86400000;
    EXPECT_TRUE(store.create_batch(b, {}).ok());
    std::vector<BatchLine> lines;
    for (int i = 1; i <= n; ++i) {
      BatchLine l;
      l.line = i;
      l.custom_id = "case-" + std::to_string(i);
      l.offset = static_cast<uint64_t>(i) * 100;
      l.length = 90;
      lines.push_back(l);
    }
    b.in_progress_ms = 2000;
    auto ok = store.start_batch(b, lines);
    EXPECT_TRUE(ok.ok() && *ok);
    b.status = BatchStatus::InProgress;
    b.total = n;
    return b;
  }

  // Hub `holder`'s lease terms at `now_ms`: kLease long.
  static LeaseTerms at(int64_t now_ms, const std::string& holder = "hub-a") { return {holder, now_ms, kLease}; }
  static constexpr int64_t kLease = 60000;

  fs::path dir_;
  std::string location_;
  std::unique_ptr<BatchStore> store_;
};

}  // namespace cellserve::fleet
