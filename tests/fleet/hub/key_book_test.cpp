// The key book's quotas: a sliding one-minute request window and a UTC-day token budget.
#include "fleet/hub/key_book.h"

#include <gtest/gtest.h>

namespace cellserve::fleet {
namespace {

using Kind = KeyBook::Check::Kind;
constexpr int64_t kDay = 24LL * 3600 * 1000;
constexpr int64_t kT0 = 20000 * kDay + 3600 * 1000;  // 01:00 UTC on some day

ApiKey key_for(const std::string& secret, int rpm, int64_t tokens_per_day) {
  ApiKey k;
  k.hash = KeyBook::hash_of(secret);
  k.id = k.hash.substr(0, 12);
  k.deployment = "risk";
  k.rpm = rpm;
  k.tokens_per_day = tokens_per_day;
  return k;
}

TEST(KeyBook, TheRateIsASlidingMinute) {
  KeyBook book;
  EXPECT_FALSE(book.any());
  book.add(key_for("k1", 2, 0));
  EXPECT_TRUE(book.any());
  EXPECT_EQ(book.admit("k1", "risk", kT0).kind, Kind::Allowed);
  EXPECT_EQ(book.admit("k1", "risk", kT0 + 30000).kind, Kind::Allowed);
  const KeyBook::Check limited = book.admit("k1", "risk", kT0 + 40000);
  EXPECT_EQ(limited.kind, Kind::RateLimited);
  EXPECT_EQ(limited.retry_after_s, 20);  // the first request leaves the window at kT0 + 60 s
  EXPECT_EQ(book.admit("k1", "risk", kT0 + 60000).kind, Kind::Allowed);
  EXPECT_EQ(book.admit("k1", "risk", kT0 + 60001).kind, Kind::RateLimited);
  EXPECT_EQ(book.all()[0].requests, 3) << "refused requests are not counted";
}

TEST(KeyBook, TokensPerDayResetAtMidnightUtc) {
  KeyBook book;
  book.add(key_for("k2", 0, 100));
  const std::string id = book.all()[0].id;
  EXPECT_EQ(book.admit("k2", "risk", kT0).kind, Kind::Allowed);
  book.add_tokens(id, 99, kT0);
  EXPECT_EQ(book.admit("k2", "risk", kT0).kind, Kind::Allowed);
  book.add_tokens(id, 5, kT0);
  const KeyBook::Check out = book.admit("k2", "risk", kT0 + 1000);
  EXPECT_EQ(out.kind, Kind::OutOfTokens);
  EXPECT_EQ(out.retry_after_s, 23 * 3600 - 1);
  EXPECT_EQ(book.admit("k2", "risk", kT0 + 23 * 3600 * 1000).kind, Kind::Allowed) << "a new day";
  EXPECT_EQ(book.all()[0].tokens, 104);
  EXPECT_EQ(book.all()[0].day_tokens, 0);
}

// What uploads and batches ask of a key, without counting a request: whether it opens the
// deployment (a spooled upload), and whether it has tokens left today (a batch's next line).
TEST(KeyBook, OpensAndHasTokensCountNothing) {
  KeyBook book;
  book.add(key_for("k3", 1, 10));
  const std::string id = book.all()[0].id;
  EXPECT_TRUE(book.opens("k3", "risk"));
  EXPECT_FALSE(book.opens("k3", "other"));
  EXPECT_FALSE(book.opens("nope", "risk"));
  EXPECT_FALSE(book.opens("", "risk"));
  EXPECT_TRUE(book.has_tokens(id, kT0));
  EXPECT_EQ(book.all()[0].requests, 0);
  EXPECT_EQ(book.admit("k3", "risk", kT0).kind, Kind::Allowed) << "its one request a minute is still there";
  book.add_tokens(id, 10, kT0);
  EXPECT_FALSE(book.has_tokens(id, kT0 + 1));
  EXPECT_TRUE(book.has_tokens(id, kT0 + kDay)) << "a new day";
  EXPECT_FALSE(book.has_tokens("no-such-id", kT0));
  ASSERT_TRUE(book.revoke(id));
  EXPECT_FALSE(book.has_tokens(id, kT0 + kDay));
  EXPECT_FALSE(book.opens("k3", "risk"));
}

TEST(KeyBook, UnknownRevokedAndOtherDeploymentsAreRefused) {
  KeyBook book;
  book.add(key_for("k3", 0, 0));
  EXPECT_EQ(book.admit("nope", "risk", kT0).kind, Kind::Unknown);
  EXPECT_EQ(book.admit("", "risk", kT0).kind, Kind::Unknown);
  EXPECT_EQ(book.admit(std::string(300, 'k'), "risk", kT0).kind, Kind::Unknown);
  const KeyBook::Check other = book.admit("k3", "fraud", kT0);
  EXPECT_EQ(other.kind, Kind::OtherDeployment);
  EXPECT_EQ(other.deployment, "risk");
  EXPECT_EQ(book.take_changed().size(), 0u) << "nothing was counted";
  EXPECT_EQ(book.admit("k3", "risk", kT0).kind, Kind::Allowed);
  EXPECT_EQ(book.take_changed().size(), 1u);
  EXPECT_EQ(book.take_changed().size(), 0u);
  EXPECT_FALSE(book.revoke("zzz"));
  EXPECT_TRUE(book.revoke(book.all()[0].id));
  EXPECT_EQ(book.admit("k3", "risk", kT0).kind, Kind::Unknown);
  EXPECT_TRUE(book.take_changed()[0].revoked);
}

}  // namespace
}  // namespace cellserve::fleet
