#include "fleet/hub/replica_loads.h"

#include <gtest/gtest.h>

#include "base/clock.h"
#include "fleet/hub/peer_queues.h"
#include "fleet/spec/replica_address.h"

namespace cellserve::fleet {
namespace {

TEST(ReplicaLoads, RoundTrip) {
  const std::vector<ReplicaLoad> loads = {{"risk", 0, "abc", 2, 1}, {"chat-2", 63, "def", 1024, 1024}};
  const auto back = replica_loads_from_json(replica_loads_json(loads));
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_EQ(back->size(), 2u);
  EXPECT_EQ((*back)[1].deployment, "chat-2");
  EXPECT_EQ((*back)[1].index, 63);
  EXPECT_EQ((*back)[1].processor_id, "def");
  EXPECT_EQ((*back)[1].slots, 1024);
  EXPECT_EQ((*back)[1].busy, 1024);
  EXPECT_TRUE(replica_loads_from_json(replica_loads_json({}))->empty());
}

TEST(ReplicaLoads, CarryThePrefillInProgressAndAcceptAnOlderPeer) {
  const std::vector<ReplicaLoad> loads = {{"risk", 0, "abc", 2, 1, 1500, 7000}};
  const auto back = replica_loads_from_json(replica_loads_json(loads));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(*back, loads);
  const auto older =
      replica_loads_from_json(R"({"loads":[{"deployment":"d","index":0,"processor":"p","slots":2,"busy":1}]})");
  ASSERT_TRUE(older.ok()) << older.status().message();
  EXPECT_EQ((*older)[0].prefill_total, 0);
  for (
      const char* body : {
          R"({"loads":[{"deployment":"d","index":0,"processor":"p","slots":2,"busy":1,"prefill_done":8,"prefill_total":7}]})",
          R"({"loads":[{"deployment":"d","index":0,"processor":"p","slots":2,"busy":1,"prefill_done":0,"prefill_total":-1}]})",
          R"({"loads":[{"deployment":"d","index":0,"processor":"p","slots":2,"busy":1,"prefill_total":5}]})",
          R"({"loads":[{"deployment":"d","index":0,"processor":"p","slots":2,"busy":1,"prefill_done":0,"prefill_total":2000000000}]})",
      }) {
    EXPECT_EQ(replica_loads_from_json(body).status().code(), StatusCode::InvalidArgument) << body;
  }
}

// What a peer sends is checked whole: one bad entry refuses the message.
TEST(ReplicaLoads, RefusesWhatIsNotAValidMessage) {
  for (const char* body : {
           "",
           "[]",
           "{\"loads\":{}}",
           "{\"loads\":[1]}",
           R"({"loads":[{"deployment":"Bad","index":0,"processor":"p","slots":1,"busy":0}]})",
           R"({"loads":[{"deployment":"d","index":-1,"processor":"p","slots":1,"busy":0}]})",
           R"({"loads":[{"deployment":"d","index":10000,"processor":"p","slots":1,"busy":0}]})",
           R"({"loads":[{"deployment":"d","index":0,"processor":"","slots":1,"busy":0}]})",
           R"({"loads":[{"deployment":"d","index":0,"processor":"p","slots":0,"busy":0}]})",
           R"({"loads":[{"deployment":"d","index":0,"processor":"p","slots":1025,"busy":0}]})",
           R"({"loads":[{"deployment":"d","index":0,"processor":"p","slots":2,"busy":3}]})",
           R"({"loads":[{"deployment":"d","index":0,"processor":"p","slots":2,"busy":-1}]})",
           R"({"loads":[{"deployment":"d","index":0,"processor":"p","slots":2.5,"busy":1}]})",
           R"({"loads":[{"deployment":"d","index":0,"processor":"p","slots":2}]})",
       }) {
    EXPECT_EQ(replica_loads_from_json(body).status().code(), StatusCode::InvalidArgument) << body;
  }
  std::vector<ReplicaLoad> many(kMaxReplicaLoads + 1, ReplicaLoad{"d", 0, "p", 1, 0});
  EXPECT_EQ(replica_loads_from_json(replica_loads_json(many)).status().code(), StatusCode::InvalidArgument);
  many.pop_back();
  EXPECT_TRUE(replica_loads_from_json(replica_loads_json(many)).ok());
  const std::string long_id(129, 'a');
  EXPECT_FALSE(replica_loads_from_json(replica_loads_json({{"d", 0, long_id, 1, 0}})).ok());
}

// A relayed request's replica is read back from the path the forwarder built.
TEST(ReplicaLoads, ReplicaAddressFromPath) {
  const auto a = replica_address_from_path(replica_path("risk", 12, "/v1/chat/completions"));
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->deployment, "risk");
  EXPECT_EQ(a->index, 12);
  EXPECT_EQ(a->rest, "/v1/chat/completions");
  EXPECT_EQ(replica_address_from_path("/d/risk/r/3")->rest, "/");
  EXPECT_EQ(replica_address_from_path("/d/risk/r/3?x=1")->index, 3);
  for (const char* bad : {"/d/risk/v1/chat/completions", "/d/risk/r/", "/d/risk/r/x/v1", "/d/Risk/r/1/v1",
                          "/d/risk/r/12345/v1", "/r/risk/1", "/d/risk", ""}) {
    EXPECT_FALSE(replica_address_from_path(bad).has_value()) << bad;
  }
}

}  // namespace
TEST(QueueLoads, RoundTripAbsentFromOlderHubsAndBounded) {
  const std::vector<QueueLoad> queues{{"chat", 7, 12500}, {"risk-2", kMaxQueueWaiting, kMaxQueueWaitMs}};
  const auto back = queue_loads_from_json(replica_loads_json({{"chat", 0, "p1", 2, 1}}, queues));
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ(*back, queues);
  // A message from a hub that sends no queues, and one with none waiting.
  EXPECT_TRUE(queue_loads_from_json(R"({"loads":[]})")->empty());
  EXPECT_EQ(replica_loads_json({}, {}), replica_loads_json({}));
  for (const char* body : {R"({"loads":[],"queues":{}})", R"({"loads":[],"queues":[1]})",
                           R"({"loads":[],"queues":[{"deployment":"Bad Name","waiting":1,"longest_ms":0}]})",
                           R"({"loads":[],"queues":[{"deployment":"chat","waiting":0,"longest_ms":0}]})",
                           R"({"loads":[],"queues":[{"deployment":"chat","waiting":100001,"longest_ms":0}]})",
                           R"({"loads":[],"queues":[{"deployment":"chat","waiting":1,"longest_ms":-1}]})",
                           R"({"loads":[],"queues":[{"deployment":"chat","waiting":1,"longest_ms":86400001}]})",
                           R"({"loads":[],"queues":[{"deployment":"chat","waiting":1.5,"longest_ms":0}]})"}) {
    EXPECT_EQ(queue_loads_from_json(body).status().code(), StatusCode::InvalidArgument) << body;
  }
  std::vector<QueueLoad> many(kMaxQueueLoads + 1, {"chat", 1, 0});
  EXPECT_EQ(queue_loads_from_json(replica_loads_json({}, many)).status().code(), StatusCode::InvalidArgument);
}

TEST(PeerQueues, FreshReportsAddUpAndStaleOnesAreForgotten) {
  ManualClock clock;
  PeerQueues peers(clock);
  peers.put("hub-a", {{"chat", 3, 4000}, {"risk", 1, 500}});
  clock.advance(std::chrono::seconds(2));
  peers.put("hub-b", {{"chat", 2, 9000}});
  auto t = peers.totals(std::chrono::seconds(5));
  EXPECT_EQ(t["chat"].waiting, 5);
  EXPECT_DOUBLE_EQ(t["chat"].longest_s, 9.0);
  EXPECT_EQ(t["risk"].waiting, 1);
  clock.advance(std::chrono::milliseconds(3001));  // hub-a's report is 5.001 s old
  t = peers.totals(std::chrono::seconds(5));
  EXPECT_EQ(t["chat"].waiting, 2);
  EXPECT_FALSE(t.contains("risk"));
  peers.put("hub-b", {});  // none waiting there any more
  EXPECT_TRUE(peers.totals(std::chrono::seconds(5)).empty());
}

}  // namespace cellserve::fleet
