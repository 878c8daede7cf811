// ClusterMember on a SQLite store with a manual clock: the leader stops acting when its own
// deadline passes (without asking the database), another member takes the lease with a raised
// fencing token once it ended, the old leader learns it lost at its next renewal, and a clean
// leave hands the lease over at once.
#include "fleet/hub/cluster_member.h"

#include <chrono>
#include <filesystem>
#include <thread>

#include <gtest/gtest.h>

#include "base/clock.h"
#include "fleet/crypto/identity.h"
#include "fleet/store/open_store.h"

namespace cellserve::fleet {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

TEST(ClusterMember, LeadsUntilItsOwnDeadlineAndHandsOverWithANewToken) {
  const fs::path dir = fs::temp_directory_path() / ("cs-member-" + random_hex(6));
  fs::create_directories(dir);
  auto store = open_store((dir / "hub.db").string());
  ASSERT_TRUE(store.ok()) << store.status().to_string();
  ManualClock clock;
  std::string log;
  const auto to_log = [&log](const std::string& line) { log += line + "\n"; };
  constexpr auto poll = 50ms;  // the lease lasts 200 ms; its holder acts for 150 ms of them
  ClusterMember a((*store)->cluster(), clock, poll, to_log);
  ClusterMember b((*store)->cluster(), clock, poll, to_log);
  EXPECT_NE(a.id(), b.id());
  a.set_peer_url("http://10.0.0.1:8090");
  b.set_peer_url("http://10.0.0.2:8090");
  ASSERT_TRUE(a.heartbeat().ok());
  ASSERT_TRUE(b.heartbeat().ok());
  auto members = a.members();
  ASSERT_TRUE(members.ok());
  EXPECT_EQ(members->alive, (std::set<std::string>{a.id(), b.id()}));
  EXPECT_EQ(members->peer_urls.at(b.id()), "http://10.0.0.2:8090");

  ASSERT_TRUE(a.lead()) << log;
  const int64_t first = a.token();
  EXPECT_GT(first, 0);
  EXPECT_FALSE(b.lead());
  EXPECT_FALSE(b.leading());
  EXPECT_EQ(b.token(), 0);
  // a's own clock: it acts until a quarter of the ttl before the lease ends, then stops by
  // itself, before the database would give the lease to anyone.
  clock.advance(149ms);
  EXPECT_TRUE(a.leading());
  clock.advance(1ms);
  EXPECT_FALSE(a.leading());

  // Once the database's lease ended (its own clock), b takes it with a raised token.
  bool took = false;
  for (int i = 0; i < 100 && !took; ++i) {
    took = b.lead();
    if (!took) std::this_thread::sleep_for(20ms);
  }
  ASSERT_TRUE(took) << log;
  EXPECT_GT(b.token(), first);
  EXPECT_NE(log.find("hub " + b.id() + " leads the fleet (reconcile lease, token " + std::to_string(b.token()) + ")"),
            std::string::npos)
      << log;
  // a asks again and learns it lost.
  EXPECT_FALSE(a.lead());
  EXPECT_EQ(a.token(), 0);
  EXPECT_NE(log.find("hub " + a.id() + " no longer leads"), std::string::npos) << log;

  // b leaves: its row goes, and a leads at once.
  b.leave();
  EXPECT_TRUE(a.lead()) << log;
  members = a.members();
  ASSERT_TRUE(members.ok());
  EXPECT_EQ(members->alive, std::set<std::string>{a.id()});
  store->reset();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace cellserve::fleet
