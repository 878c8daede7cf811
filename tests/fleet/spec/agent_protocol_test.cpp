// The agent protocol's JSON: every field round-trips, an older peer's missing fields read as
// defaults, and a wrong type is an error naming the field.
#include "fleet/spec/agent_protocol.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

namespace cellserve::fleet {
namespace {

namespace json = boost::json;

std::string error_of(const Result<std::vector<ReplicaReport>>& r) { return r.ok() ? "ok" : r.status().message(); }

TEST(AgentProtocol, AgentInfoCarriesSimulated) {
  AgentInfo info;
  info.name = "sim-1";
  info.simulated = true;
  info.benchmark = {400, 20, "simulated prefill=400,decode=20,slots=4"};
  auto back = agent_info_from_json(to_json(info));
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_TRUE(back->simulated);
  EXPECT_EQ(back->benchmark.decode_tps, 20);

  json::value v = to_json(info);
  v.as_object().erase("simulated");  // an agent from before simulate mode
  back = agent_info_from_json(v);
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_FALSE(back->simulated);

  v.as_object()["simulated"] = "yes";
  auto bad = agent_info_from_json(v);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("info.simulated"), std::string::npos) << bad.status().message();
}

TEST(AgentProtocol, ReplicaReportCarriesSlots) {
  ReplicaReport r;
  r.deployment = "d";
  r.index = 1;
  r.state = ReplicaState::Ready;
  r.slots = 4;
  r.free_slots = 3;
  auto back = replica_reports_from_json(to_json(std::vector<ReplicaReport>{r}));
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  ASSERT_EQ(back->size(), 1u);
  EXPECT_EQ((*back)[0].slots, 4);
  EXPECT_EQ((*back)[0].free_slots, 3);

  json::value v = to_json(std::vector<ReplicaReport>{r});
  json::object& row = v.as_object()["replicas"].as_array()[0].as_object();
  row.erase("slots");
  row.erase("free_slots");  // an older agent
  back = replica_reports_from_json(v);
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ((*back)[0].slots, 0);
  EXPECT_EQ((*back)[0].free_slots, 0);

  row["slots"] = "four";
  EXPECT_NE(error_of(replica_reports_from_json(v)).find("replica.slots"), std::string::npos);
  row["slots"] = 2.5;
  EXPECT_NE(error_of(replica_reports_from_json(v)).find("replica.slots"), std::string::npos);
  row["slots"] = -1;
  EXPECT_NE(error_of(replica_reports_from_json(v)).find("replica.slots"), std::string::npos);
  row["slots"] = 2;
  row["free_slots"] = 3;
  EXPECT_NE(error_of(replica_reports_from_json(v)).find("replica.free_slots"), std::string::npos);
  row["free_slots"] = json::array{};
  EXPECT_NE(error_of(replica_reports_from_json(v)).find("replica.free_slots"), std::string::npos);
}

TEST(AgentProtocol, AssignmentCarriesTheSimulatedEngine) {
  AssignmentMessage a;
  a.deployment = "sim";
  a.model_url = "http://127.0.0.1/none.gguf";
  a.model_sha256 = std::string(64, 'a');
  a.engine.simulated = true;
  auto back = assignments_from_json(to_json(std::vector<AssignmentMessage>{a}));
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  ASSERT_EQ(back->size(), 1u);
  EXPECT_TRUE((*back)[0].engine.simulated);

  json::value v = to_json(std::vector<AssignmentMessage>{a});
  v.as_object()["assignments"].as_array()[0].as_object()["engine"].as_object()["simulated"] = 1;
  auto bad = assignments_from_json(v);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("engine.simulated"), std::string::npos) << bad.status().message();
}

}  // namespace
}  // namespace cellserve::fleet
