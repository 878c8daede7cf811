// Several hubs on one batch store (issue 46): each opens its own store on the same database (on
// SQLite, two connections to one batch.db stand in for them). Leases name their holder and
// expire: concurrent holders never share a line; a line whose lease expired goes to another
// holder and the first holder's late answer is refused, so each line ends once; renewal keeps a
// lease; finalizing a batch is claimed by one hub, and taken over from a dead one. Every test runs
// on both engines.
#include <atomic>
#include <set>
#include <thread>
#include <vector>

#include "tests/fleet/batch/batch_store_fixture.h"

namespace cellserve::fleet {
namespace {

class BatchLeaseTest : public BatchStoreTest {};

INSTANTIATE_TEST_SUITE_P(Engines, BatchLeaseTest, ::testing::Values(BatchEngine::Sqlite, BatchEngine::Postgres),
                         batch_engine_name);

TEST_P(BatchLeaseTest, TwoHubsLeasingFromThreadsNeverShareALine) {
  constexpr int kLines = 120;
  std::unique_ptr<BatchStore> other = open();
  ASSERT_NE(other, nullptr);
  const Batch b = started(kLines);
  BatchStore* hubs[] = {store_.get(), other.get()};
  std::vector<int> taken[2];
  std::string failures[2];
  std::vector<std::thread> threads;
  for (int i = 0; i < 2; ++i) {
    threads.emplace_back([&, i] {
      const std::string holder = i == 0 ? "hub-a" : "hub-b";
      while (true) {
        auto leased = hubs[i]->lease_lines(b.id, 5, at(3000, holder));
        if (!leased.ok()) {
          failures[i] = leased.status().to_string();
          return;
        }
        if (leased->empty()) return;
        for (const BatchLine& l : *leased) {
          taken[i].push_back(l.line);
          auto ended = hubs[i]->end_line(l, at(3001, holder), LineState::Done, "r", holder);
          if (!ended.ok() || !*ended) failures[i] = "line " + std::to_string(l.line) + " did not end";
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failures[0], "");
  EXPECT_EQ(failures[1], "");
  std::multiset<int> all(taken[0].begin(), taken[0].end());
  all.insert(taken[1].begin(), taken[1].end());
  EXPECT_EQ(all.size(), static_cast<size_t>(kLines));
  EXPECT_EQ(std::set<int>(all.begin(), all.end()).size(), static_cast<size_t>(kLines)) << "a line was leased twice";
  EXPECT_EQ((**store_->batch(b.id)).completed, kLines);
}

TEST_P(BatchLeaseTest, AnExpiredLeaseGoesToAnotherHubAndTheFirstHubsAnswerIsRefused) {
  std::unique_ptr<BatchStore> other = open();
  ASSERT_NE(other, nullptr);
  const Batch b = started(1);
  auto first = store_->lease_lines(b.id, 1, at(3000, "hub-a"));
  ASSERT_EQ(first->size(), 1u);
  // While hub-a's lease lasts, hub-b finds nothing to lease.
  EXPECT_EQ(other->lease_lines(b.id, 1, at(3000 + kLease - 1, "hub-b"))->size(), 0u);
  // hub-a stalls past its lease: hub-b leases the line again, another attempt.
  auto second = other->lease_lines(b.id, 1, at(3000 + kLease, "hub-b"));
  ASSERT_EQ(second->size(), 1u);
  EXPECT_EQ((*second)[0].attempts, 2);
  // hub-a's late answer, its release and its return change nothing, even before hub-b's lease ends.
  EXPECT_FALSE(*store_->end_line((*first)[0], at(3000 + kLease + 1, "hub-a"), LineState::Done, "late", "dev-a"));
  ASSERT_TRUE(store_->release_line((*first)[0], "hub-a").ok());
  ASSERT_TRUE(store_->return_line((*first)[0], "hub-a").ok());
  EXPECT_EQ(*store_->count_lines(b.id, LineState::Leased), 1);
  // The same holder with the old attempt (a duplicate worker of one hub) is refused too.
  BatchLine stale = (*second)[0];
  stale.attempts = 1;
  EXPECT_FALSE(*other->end_line(stale, at(3000 + kLease + 2, "hub-b"), LineState::Done, "stale", "dev-b"));
  EXPECT_TRUE(*other->end_line((*second)[0], at(3000 + kLease + 3, "hub-b"), LineState::Done, "fresh", "dev-b"));
  EXPECT_EQ(*store_->results(b.id, LineState::Done), std::vector<std::string>{"fresh"});
  EXPECT_EQ((**store_->batch(b.id)).completed, 1);
}

TEST_P(BatchLeaseTest, AnAnswerAfterItsOwnLeaseExpiredIsRefused) {
  const Batch b = started(1);
  auto leased = store_->lease_lines(b.id, 1, at(3000));
  ASSERT_EQ(leased->size(), 1u);
  EXPECT_FALSE(*store_->end_line((*leased)[0], at(3000 + kLease), LineState::Done, "late", "dev"));
  EXPECT_EQ(*store_->count_lines(b.id, LineState::Leased), 1) << "left for the next lease";
}

TEST_P(BatchLeaseTest, RenewalKeepsALongLineLeased) {
  std::unique_ptr<BatchStore> other = open();
  ASSERT_NE(other, nullptr);
  const Batch b = started(2);
  auto mine = store_->lease_lines(b.id, 1, at(3000, "hub-a"));
  ASSERT_EQ(mine->size(), 1u);
  // Renewed each round: the line's lease moves with the latest renewal.
  EXPECT_EQ(*store_->renew_leases(at(3000 + kLease - 10, "hub-a")), 1);
  EXPECT_EQ(*other->renew_leases(at(3000 + kLease - 10, "hub-b")), 0) << "hub-b holds nothing";
  auto others = other->lease_lines(b.id, 5, at(3000 + kLease + 10, "hub-b"));
  ASSERT_EQ(others->size(), 1u) << "only the line never leased";
  EXPECT_EQ((*others)[0].line, 2);
  EXPECT_TRUE(*store_->end_line((*mine)[0], at(3000 + 2 * kLease - 20, "hub-a"), LineState::Done, "long", "dev"));
  // An expired lease is not renewed: it may already be another hub's.
  EXPECT_EQ(*other->renew_leases(at(3000 + 3 * kLease, "hub-b")), 0);
  EXPECT_EQ(*other->count_lines(b.id, LineState::Leased), 1) << "hub-b's line stays leased, its lease expired";
}

TEST_P(BatchLeaseTest, AStartingHubReleasesOnlyItsOwnLeases) {
  const Batch b = started(3);
  ASSERT_EQ(store_->lease_lines(b.id, 1, at(3000, "hub-a"))->size(), 1u);
  ASSERT_EQ(store_->lease_lines(b.id, 2, at(3000, "hub-b"))->size(), 2u);
  EXPECT_EQ(*store_->release_leases("hub-a"), 1);
  EXPECT_EQ(*store_->count_lines(b.id, LineState::Pending), 1);
  EXPECT_EQ(*store_->count_lines(b.id, LineState::Leased), 2);
}

TEST_P(BatchLeaseTest, CancellingOrExpiringFailsTheLinesOfExpiredLeases) {
  const Batch b = started(3);
  ASSERT_EQ(store_->lease_lines(b.id, 1, at(3000, "hub-dead"))->size(), 1u);
  ASSERT_EQ(store_->lease_lines(b.id, 1, at(3000 + kLease, "hub-live"))->size(), 1u);
  EXPECT_TRUE(*store_->cancel_batch(b.id, 3000 + kLease));
  EXPECT_FALSE(*store_->cancel_batch(b.id, 3000 + kLease)) << "already cancelling";
  // The dead hub's line and the pending one fail; the live hub's line finishes.
  EXPECT_EQ(*store_->fail_pending(b.id, "batch_cancelled", "cancelled", 3000 + kLease + 1), 2);
  EXPECT_EQ(*store_->count_lines(b.id, LineState::Leased), 1);
  EXPECT_EQ((**store_->batch(b.id)).failed, 2);
}

TEST_P(BatchLeaseTest, OfTwoHubsRacingToFinalizeOneWinsAndADeadOnesClaimIsTakenOver) {
  std::unique_ptr<BatchStore> other = open();
  ASSERT_NE(other, nullptr);
  Batch b = started(1);
  std::atomic<int> claims{0};
  std::thread first([&] { claims += *store_->claim_finalization(b.id, at(3000, "hub-a")) ? 1 : 0; });
  std::thread second([&] { claims += *other->claim_finalization(b.id, at(3000, "hub-b")) ? 1 : 0; });
  first.join();
  second.join();
  EXPECT_EQ(claims.load(), 1);
  // The winner renews its claim at 3001 (hub-a's call renews it when hub-a won; else hub-b's does).
  const bool a_won = *store_->claim_finalization(b.id, at(3001, "hub-a"));
  if (!a_won) ASSERT_TRUE(*other->claim_finalization(b.id, at(3001, "hub-b")));
  const std::string winner = a_won ? "hub-a" : "hub-b";
  const std::string loser = a_won ? "hub-b" : "hub-a";
  b.status = BatchStatus::Completed;
  b.completed_ms = 4000;
  EXPECT_FALSE(*store_->finish_batch(b, loser)) << "the loser writes nothing";
  // The winner dies before finishing: once its claim expires, the other hub takes it over.
  EXPECT_FALSE(*other->claim_finalization(b.id, at(3001 + kLease - 1, loser)));
  EXPECT_TRUE(*other->claim_finalization(b.id, at(3001 + kLease, loser)));
  EXPECT_FALSE(*store_->finish_batch(b, winner)) << "the late first finalizer is fenced off";
  EXPECT_TRUE(*other->finish_batch(b, loser));
  EXPECT_EQ((**store_->batch(b.id)).status, BatchStatus::Completed);
  // A finished batch is never claimed or written again.
  EXPECT_FALSE(*store_->claim_finalization(b.id, at(9 * kLease, winner)));
  EXPECT_FALSE(*store_->finish_batch(b, loser));
  EXPECT_FALSE(*store_->cancel_batch(b.id, 9 * kLease));
}

}  // namespace
}  // namespace cellserve::fleet
