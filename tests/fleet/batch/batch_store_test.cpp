// The batch store: a line ends once, with its answer recorded in the same transaction; lines
// leased when the hub died run again; expiry and cancellation fail what never ran; a store
// reopened (a restarted hub) sees exactly what was committed. Each test runs on SQLite and on a
// private PostgreSQL server (skipped without its binaries or without CELLSERVE_POSTGRES).
#include "fleet/batch/batch_store.h"

#include <boost/json.hpp>

#include "fleet/store/sqlite_db.h"
#include "tests/fleet/batch/batch_store_fixture.h"

namespace cellserve::fleet {
namespace {

INSTANTIATE_TEST_SUITE_P(Engines, BatchStoreTest, ::testing::Values(BatchEngine::Sqlite, BatchEngine::Postgres),
                         batch_engine_name);

TEST_P(BatchStoreTest, ALineEndsOnceWithItsAnswer) {
  const Batch b = started(3);
  auto first = store_->lease_lines(b.id, 2, at(3000));
  ASSERT_TRUE(first.ok());
  ASSERT_EQ(first->size(), 2u);
  EXPECT_EQ((*first)[0].custom_id, "case-1");
  EXPECT_EQ((*first)[0].attempts, 1);
  EXPECT_EQ((*first)[1].offset, 200u);
  EXPECT_TRUE(*store_->end_line((*first)[0], at(5000), LineState::Done, R"({"custom_id":"case-1"})", "dev-a"));
  // A second end of the same line (a late duplicate) changes nothing.
  EXPECT_FALSE(*store_->end_line((*first)[0], at(6000), LineState::Done, R"({"custom_id":"again"})", "dev-b"));
  EXPECT_TRUE(*store_->end_line((*first)[1], at(7000), LineState::Failed, R"({"custom_id":"case-2"})", "dev-a"));
  const Batch now = **store_->batch(b.id);
  EXPECT_EQ(now.completed, 1);
  EXPECT_EQ(now.failed, 1);
  EXPECT_EQ(now.total, 3);
  EXPECT_EQ(*store_->results(b.id, LineState::Done), std::vector<std::string>{R"({"custom_id":"case-1"})"});
  auto t = store_->throughput(b.id);
  ASSERT_TRUE(t.ok());
  ASSERT_EQ(t->answered_by_device.size(), 1u);
  EXPECT_EQ(t->answered_by_device[0].first, "dev-a");
  EXPECT_EQ(t->first_ended_ms, 5000);
}

TEST_P(BatchStoreTest, LeasesOfAStoppedHubRunAgainAndNothingIsLost) {
  const Batch b = started(4);
  auto leased = store_->lease_lines(b.id, 3, at(3000));
  ASSERT_EQ(leased->size(), 3u);
  ASSERT_TRUE(*store_->end_line((*leased)[0], at(3001), LineState::Done, "one", "dev"));
  // The hub dies: lines 2 and 3 were running. A new store on the same file is the restarted hub.
  store_.reset();
  store_ = open();
  ASSERT_NE(store_, nullptr);
  EXPECT_EQ(*store_->release_all_leases(), 2);
  EXPECT_EQ(*store_->count_lines(b.id, LineState::Pending), 3);
  auto again = store_->lease_lines(b.id, 10, at(4000));
  ASSERT_EQ(again->size(), 3u);
  EXPECT_EQ((*again)[0].line, 2);
  EXPECT_EQ((*again)[0].attempts, 2);  // the interrupted run counted
  EXPECT_EQ((*again)[2].line, 4);
  EXPECT_EQ((*again)[2].attempts, 1);
  for (const BatchLine& l : *again) ASSERT_TRUE(*store_->end_line(l, at(4001), LineState::Done, "x", "dev"));
  EXPECT_EQ((**store_->batch(b.id)).completed, 4);
  EXPECT_EQ(store_->results(b.id, LineState::Done)->size(), 4u);
}

TEST_P(BatchStoreTest, ExpiryFailsWhatNeverRanAndReleaseRetries) {
  const Batch b = started(3);
  auto leased = store_->lease_lines(b.id, 1, at(3000));
  ASSERT_TRUE(store_->release_line((*leased)[0], "hub-a").ok());
  EXPECT_EQ(*store_->count_lines(b.id, LineState::Pending), 3);
  ASSERT_EQ(store_->lease_lines(b.id, 1, at(3000))->front().attempts, 2);
  EXPECT_EQ(*store_->fail_pending(b.id, "batch_expired", "too late", 3001), 2);  // the leased one is left running
  const Batch now = **store_->batch(b.id);
  EXPECT_EQ(now.failed, 2);
  const auto failed = *store_->results(b.id, LineState::Failed);
  ASSERT_EQ(failed.size(), 2u);
  const boost::json::value line = boost::json::parse(failed[0]);
  EXPECT_EQ(line.at("custom_id").as_string(), "case-2");
  EXPECT_TRUE(line.at("response").is_null());
  EXPECT_EQ(line.at("error").at("code").as_string(), "batch_expired");
}

TEST_P(BatchStoreTest, ACancelledValidatingBatchDoesNotStart) {
  Batch b;
  b.id = "batch_x1";
  b.deployment = "risk";
  b.created_ms = 1;
  ASSERT_TRUE(store_->create_batch(b, {}).ok());
  EXPECT_EQ(store_->create_batch(b, {}).code(), StatusCode::Internal);  // the id is taken
  b.status = BatchStatus::Cancelling;
  ASSERT_TRUE(store_->update_batch(b).ok());
  BatchLine l;
  l.line = 1;
  l.custom_id = "a";
  EXPECT_FALSE(*store_->start_batch(b, {l}));
  EXPECT_EQ(*store_->count_lines(b.id, LineState::Pending), 0);
  EXPECT_EQ((**store_->batch(b.id)).status, BatchStatus::Cancelling);
}

TEST_P(BatchStoreTest, FilesAndBatchesListNewestFirstWithCursors) {
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(store_->add_file({"file-" + std::to_string(i), "risk", "f.jsonl", "batch", 10, 100 + i}).ok());
  }
  ASSERT_TRUE(store_->add_file({"file-other", "other", "f.jsonl", "batch", 10, 200}).ok());
  const BatchStore::Scope risk{"risk", 0, ""};
  auto page = store_->files(risk, "", 2);
  ASSERT_EQ(page->size(), 2u);
  EXPECT_EQ((*page)[0].id, "file-4");
  auto next = store_->files(risk, (*page)[1].id, 10);
  ASSERT_EQ(next->size(), 3u);
  EXPECT_EQ((*next)[0].id, "file-2");
  EXPECT_TRUE(store_->delete_file("file-2").ok());
  EXPECT_EQ(store_->delete_file("file-2").code(), StatusCode::NotFound);
  EXPECT_FALSE(store_->file("file-2")->has_value());
}

// Issue 43 items 9 and 4: a key lists only its own files and batches, and only those of the
// deployment created with them; the admin's scope (owner "") lists every one of the deployment.
TEST_P(BatchStoreTest, ListsShowOnlyTheOwnersRowsOfTheDeploymentsIdentity) {
  const auto file = [](std::string id, int64_t created, std::string owner) {
    BatchFile f{std::move(id), "risk", "f.jsonl", "batch", 10, 100};
    f.deployment_created_ms = created;
    f.owner_key = std::move(owner);
    return f;
  };
  ASSERT_TRUE(store_->add_file(file("file-a", 7, "keyA")).ok());
  ASSERT_TRUE(store_->add_file(file("file-b", 7, "keyB")).ok());
  ASSERT_TRUE(store_->add_file(file("file-old", 6, "keyA")).ok());  // an earlier "risk"
  const auto ids = [](const Result<std::vector<BatchFile>>& r) {
    std::vector<std::string> out;
    for (const BatchFile& f : *r) out.push_back(f.id);
    return out;
  };
  EXPECT_EQ(ids(store_->files({"risk", 7, "keyA"}, "", 10)), std::vector<std::string>{"file-a"});
  EXPECT_EQ(ids(store_->files({"risk", 7, "keyB"}, "", 10)), std::vector<std::string>{"file-b"});
  EXPECT_EQ(ids(store_->files({"risk", 7, ""}, "", 10)).size(), 2u);
  EXPECT_EQ(ids(store_->files({"risk", 6, ""}, "", 10)), std::vector<std::string>{"file-old"});
  const BatchFile read = **store_->file("file-a");
  EXPECT_EQ(read.owner_key, "keyA");
  EXPECT_EQ(read.deployment_created_ms, 7);

  Batch mine = started(1);  // deployment_created_ms 0, no key
  Batch theirs;
  theirs.id = "batch_theirs";
  theirs.deployment = "risk";
  theirs.key_id = "keyB";
  theirs.deployment_created_ms = 7;
  theirs.output_expires_after_s = 3600;
  ASSERT_TRUE(store_->create_batch(theirs, {}).ok());
  ASSERT_EQ(store_->batches({"risk", 7, "keyB"}, "", 10)->size(), 1u);
  EXPECT_EQ((*store_->batches({"risk", 7, "keyB"}, "", 10))[0].output_expires_after_s, 3600);
  EXPECT_EQ(store_->batches({"risk", 7, "keyA"}, "", 10)->size(), 0u);
  EXPECT_EQ(store_->batches({"risk", 0, ""}, "", 10)->size(), 1u) << mine.id;
  ASSERT_TRUE(store_->bind_unbound("risk", 7).ok());
  EXPECT_EQ(store_->batches({"risk", 7, ""}, "", 10)->size(), 2u) << "the older row is bound to risk now";
  EXPECT_EQ(store_->files({"risk", 6, ""}, "", 10)->size(), 1u) << "a bound row is never rebound";
}

TEST_P(BatchStoreTest, DeletingADeploymentRemovesItsFilesBatchesAndLines) {
  ASSERT_TRUE(store_->add_file({"file-in", "risk", "f.jsonl", "batch", 10, 100}).ok());
  ASSERT_TRUE(store_->add_file({"file-other", "other", "f.jsonl", "batch", 10, 100}).ok());
  const Batch b = started(3);
  auto leased = store_->lease_lines(b.id, 1, at(3000));
  ASSERT_EQ(leased->size(), 1u);
  auto removed = store_->delete_deployment("risk");
  ASSERT_TRUE(removed.ok()) << removed.status().message();
  EXPECT_EQ(*removed, std::vector<std::string>{"file-in"});
  EXPECT_FALSE(store_->batch(b.id)->has_value());
  EXPECT_EQ(*store_->count_lines(b.id, LineState::Pending), 0);
  EXPECT_EQ(*store_->count_lines(b.id, LineState::Leased), 0);
  EXPECT_FALSE(*store_->end_line((*leased)[0], at(3001), LineState::Done, "{}", "dev"))
      << "a line in flight ends nowhere";
  EXPECT_TRUE(store_->file("file-other")->has_value());
  EXPECT_EQ(store_->batches_in({BatchStatus::InProgress})->size(), 0u);
}

TEST_P(BatchStoreTest, ExpiredFilesAreFoundByTheirTime) {
  BatchFile f{"file-out", "risk", "o.jsonl", "batch_output", 10, 100};
  f.expires_ms = 5000;
  ASSERT_TRUE(store_->add_file(f).ok());
  ASSERT_TRUE(store_->add_file({"file-kept", "risk", "f.jsonl", "batch", 10, 100}).ok());
  EXPECT_EQ(store_->expired_files(4999, 10)->size(), 0u);
  EXPECT_EQ(*store_->expired_files(5000, 10), std::vector<std::string>{"file-out"});
  EXPECT_EQ((**store_->file("file-out")).expires_ms, 5000);
}

// A line leased for a key with no room left goes back without costing one of its attempts.
TEST_P(BatchStoreTest, AReturnedLineKeepsItsAttempts) {
  const Batch b = started(1);
  for (int i = 0; i < 5; ++i) {
    auto leased = store_->lease_lines(b.id, 1, at(3000));
    ASSERT_EQ(leased->size(), 1u);
    EXPECT_EQ((*leased)[0].attempts, 1);
    ASSERT_TRUE(store_->return_line((*leased)[0], "hub-a").ok());
  }
  EXPECT_EQ(*store_->count_lines(b.id, LineState::Pending), 1);
}

TEST_P(BatchStoreTest, AFileFromANewerBuildIsRefused) {
  if (GetParam() != BatchEngine::Sqlite) GTEST_SKIP() << "batch.db's own versioning";
  store_.reset();
  {
    auto db = SqliteDb::open((dir_ / "batch.db").string());
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE((*db)->exec("PRAGMA user_version = 99").ok());
  }
  auto newer = BatchStore::open((dir_ / "batch.db").string());
  ASSERT_FALSE(newer.ok());
  EXPECT_EQ(newer.status().code(), StatusCode::Unimplemented);
  EXPECT_NE(newer.status().message().find("batch.db schema version 99 is newer"), std::string::npos)
      << newer.status().message();
}

}  // namespace
}  // namespace cellserve::fleet
