// The store suite's fixture, shared by the test files of tests/fleet/store/: StoreTest runs each
// test once per engine (SQLite, PostgreSQL), on an empty store of its own.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <memory>
#include <string>

#include <unistd.h>

#include "fleet/store/open_store.h"
#include "fleet/store/store.h"
#ifdef CELLSERVE_HAVE_POSTGRES
#include "tests/support/postgres_server.h"
#endif

namespace cellserve::fleet {

// A database path in the temp folder, removed (with its WAL files) at the end of the test.
class TempDb {
 public:
  TempDb() {
    static std::atomic<int> counter{0};
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = info->name();  // "Test/Engine" for the suite's instances
    std::replace(name.begin(), name.end(), '/', '_');
    path_ = (std::filesystem::temp_directory_path() /
             ("cs_store_test_" + std::to_string(::getpid()) + "_" + name + "_" + std::to_string(counter++) + ".db"))
                .string();
    remove();
  }
  ~TempDb() { remove(); }
  const std::string& path() const { return path_; }

 private:
  void remove() {
    std::error_code ec;
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) std::filesystem::remove(path_ + suffix, ec);
  }
  std::string path_;
};

inline std::unique_ptr<Store> open_or_die(const std::string& path) {
  auto store = open_store(path);
  EXPECT_TRUE(store.ok()) << store.status().to_string();
  return store.ok() ? std::move(store).value() : nullptr;
}

enum class StoreEngine { Sqlite, Postgres };

inline void PrintTo(StoreEngine e, std::ostream* os) { *os << (e == StoreEngine::Sqlite ? "SQLite" : "PostgreSQL"); }

inline std::string store_engine_name(const ::testing::TestParamInfo<StoreEngine>& info) {
  return info.param == StoreEngine::Sqlite ? "Sqlite" : "Postgres";
}

// The suite every Store passes, once per engine: each test gets an empty store of its own
// (a SQLite temp file, or a fresh database on the private PostgreSQL server), and reopen()
// opens it again as a restarted hub would. The PostgreSQL instances skip when the server
// binaries are absent (tests/support/postgres_server.h).
class StoreTest : public ::testing::TestWithParam<StoreEngine> {
 protected:
  void SetUp() override {
    if (GetParam() == StoreEngine::Sqlite) {
      location_ = file_.path();
      return;
    }
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
  std::unique_ptr<Store> reopen() { return open_or_die(location_); }

 private:
  TempDb file_;
  std::string location_;
};

}  // namespace cellserve::fleet
