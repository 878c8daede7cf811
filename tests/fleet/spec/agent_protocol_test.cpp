// The agent protocol's JSON: every field round-trips, an older peer's missing fields read as
// defaults, and a wrong type is an error naming the field.
#include "fleet/spec/agent_protocol.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "tests/fleet/every_field_spec.h"

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

// Every number a device reports is range-checked before it is cast (issue 43, item 14): NaN and
// infinity cannot be JSON, but negative, absurd and 1e300 values can, and a cast of 1e300 to an
// integer is undefined behaviour.
TEST(AgentProtocol, DeviceNumbersAreRangeChecked) {
  const auto info_error = [](const char* section, const char* key, json::value value) {
    json::value v = to_json(AgentInfo{});
    json::object& o = v.as_object();
    json::object& target = section[0] != '\0' ? o[section].as_object() : o;
    target[key] = std::move(value);
    auto r = agent_info_from_json(v);
    return r.ok() ? std::string("ok") : r.status().message();
  };
  EXPECT_EQ(info_error("specs", "ram_bytes", 1e300), "info.specs.ram_bytes must be between 0 and 1125899906842624");
  EXPECT_EQ(info_error("specs", "ram_bytes", -1), "info.specs.ram_bytes must be a non-negative number");
  EXPECT_NE(info_error("specs", "free_disk_bytes", 1e30).find("info.specs.free_disk_bytes must be between 0 and"),
            std::string::npos);
  EXPECT_NE(info_error("benchmark", "decode_tps", 1e12).find("info.benchmark.decode_tps must be between 0 and"),
            std::string::npos);
  EXPECT_NE(info_error("", "price_per_day", 1e300).find("info.price_per_day must be between 0 and"), std::string::npos);
  EXPECT_EQ(info_error("specs", "ram_bytes", 16.0 * (1 << 30)), "ok");
  json::array many(300, json::value("neon"));
  EXPECT_NE(info_error("specs", "cpu_features", many).find("at most 256"), std::string::npos);

  ReplicaReport r;
  r.deployment = "d";
  json::value v = to_json(std::vector<ReplicaReport>{r});
  v.as_object()["replicas"].as_array()[0].as_object()["prefill_tps"] = 1e300;
  EXPECT_NE(error_of(replica_reports_from_json(v)).find("replica.prefill_tps must be between 0 and"),
            std::string::npos);
}

// A device's name and a replica's detail are bounded and stripped of control characters (terminal
// escapes, newlines that forge log lines, bidirectional overrides that reorder a table).
TEST(AgentProtocol, DeviceTextIsBoundedAndStripped) {
  AgentInfo info;
  info.name = "pho\x1b[31mne\n\r\t\x7f\u202Edev" + std::string(100, 'x');
  info.specs.arch = "arm64\x1b]0;title\x07";
  auto back = agent_info_from_json(to_json(info));
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ(back->name, "pho[31mnedev" + std::string(64 - 12, 'x'));
  EXPECT_EQ(back->specs.arch, "arm64]0;title");

  ReplicaReport r;
  r.deployment = "d";
  r.detail = "download: ok\nreplica d/0: forged line \u00e9\u0085" + std::string(400, 'y');
  auto reports = replica_reports_from_json(to_json(std::vector<ReplicaReport>{r}));
  ASSERT_TRUE(reports.ok()) << reports.status().to_string();
  const std::string& detail = (*reports)[0].detail;
  EXPECT_EQ(detail.find('\n'), std::string::npos);
  EXPECT_EQ(detail.rfind("download: okreplica d/0: forged line \u00e9yyy", 0), 0u) << detail;
  EXPECT_EQ(detail.size(), 256u + 1);  // 256 characters, one of them two bytes
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

TEST(AgentProtocol, ReplicaReportCarriesThePrefillInProgressWithinBounds) {
  ReplicaReport r;
  r.deployment = "d";
  r.state = ReplicaState::Ready;
  r.slots = 2;
  r.prefill_done = 1500;
  r.prefill_total = 7000;
  json::value v = to_json(std::vector<ReplicaReport>{r});
  auto back = replica_reports_from_json(v);
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ((*back)[0].prefill_done, 1500);
  EXPECT_EQ((*back)[0].prefill_total, 7000);
  json::object& row = v.as_object()["replicas"].as_array()[0].as_object();
  row["prefill_done"] = 7001;  // more read than there is
  EXPECT_NE(error_of(replica_reports_from_json(v)).find("replica.prefill_done"), std::string::npos);
  row["prefill_done"] = 0;
  row["prefill_total"] = static_cast<int64_t>(kMaxReportedPrefillTokens) + 1;
  EXPECT_NE(error_of(replica_reports_from_json(v)).find("replica.prefill_total"), std::string::npos);
  row["prefill_total"] = -5;
  EXPECT_NE(error_of(replica_reports_from_json(v)).find("replica.prefill_total"), std::string::npos);
  row.erase("prefill_total");
  row.erase("prefill_done");  // an older agent: nothing in progress
  back = replica_reports_from_json(v);
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ((*back)[0].prefill_total, 0);
}

TEST(AgentProtocol, ReplicaReportCarriesTheTunedSettingsWithinBounds) {
  ReplicaReport r;
  r.deployment = "d";
  r.state = ReplicaState::Ready;
  r.tuned = TunedSettings{6, 128, 2, 8192, 512, true, "q8_0", true};
  auto back = replica_reports_from_json(to_json(std::vector<ReplicaReport>{r}));
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  ASSERT_TRUE((*back)[0].tuned.has_value());
  const TunedSettings& t = *(*back)[0].tuned;
  EXPECT_EQ(t.threads, 6);
  EXPECT_EQ(t.prefill_chunk, 128);
  EXPECT_EQ(t.parallel, 2);
  EXPECT_EQ(t.ctx_size, 8192);
  EXPECT_EQ(t.batch_size, 512);
  EXPECT_TRUE(t.autotuned);

  // Before the replica is loaded, and from an older agent: none.
  r.tuned.reset();
  back = replica_reports_from_json(to_json(std::vector<ReplicaReport>{r}));
  ASSERT_TRUE(back.ok());
  EXPECT_FALSE((*back)[0].tuned.has_value());
  json::value v = to_json(std::vector<ReplicaReport>{r});
  json::object& row = v.as_object()["replicas"].as_array()[0].as_object();
  row.erase("tuned");
  back = replica_reports_from_json(v);
  ASSERT_TRUE(back.ok());
  EXPECT_FALSE((*back)[0].tuned.has_value());

  // A hostile device's numbers are refused, naming the field.
  const std::pair<const char*, json::value> bad[] = {
      {"threads", kMaxTunedThreads + 1}, {"threads", -1},       {"prefill_chunk", 1e12}, {"parallel", 5000},
      {"ctx_size", 1LL << 40},           {"batch_size", "big"}, {"autotuned", "yes"},    {"ctx_size", 0.5}};
  for (const auto& [field, value] : bad) {
    json::object tuned = to_json(TunedSettings{1, 1, 1, 1, 1, false, "f16", false}).as_object();
    tuned[field] = value;
    row["tuned"] = tuned;
    EXPECT_NE(error_of(replica_reports_from_json(v)).find(std::string("replica.tuned.") + field), std::string::npos)
        << field << " " << json::serialize(value);
  }
  row["tuned"] = "fast";
  EXPECT_NE(error_of(replica_reports_from_json(v)).find("replica.tuned"), std::string::npos);
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

// The engine section is written by the spec's own writer (engine_settings_json): every engine
// setting a spec can hold reaches the agent, and a setting the agent's reader misses fails here.
TEST(AgentProtocol, AssignmentCarriesEveryEngineSetting) {
  AssignmentMessage a;
  a.deployment = "every";
  a.model_url = "http://127.0.0.1/m.gguf";
  a.model_sha256 = std::string(64, 'a');
  a.engine = test_specs::every_field_spec().engine;
  auto back = assignments_from_json(to_json(std::vector<AssignmentMessage>{a}));
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  ASSERT_EQ(back->size(), 1u);
  EXPECT_EQ((*back)[0].engine, a.engine);
  EXPECT_NE((*back)[0].engine, EngineSettings{});
}

}  // namespace
}  // namespace cellserve::fleet
