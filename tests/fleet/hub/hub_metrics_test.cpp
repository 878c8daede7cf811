// The hub's /metrics text: series per deployment and replica with known labels only, histograms
// in Prometheus' shape, series of removed deployments dropped, and the last hour's completions.
#include "fleet/hub/hub_metrics.h"

#include <gtest/gtest.h>

namespace cellserve::fleet {
namespace {

void fill(ReplicaRegistry& reg, const std::vector<std::string>& names) {
  std::vector<Deployment> ds;
  std::vector<Replica> rows;
  for (const std::string& name : names) {
    Deployment d;
    d.spec.name = name;
    d.spec.replicas = 2;
    ds.push_back(d);
    for (int i = 0; i < 2; ++i) {
      Replica r;
      r.deployment = name;
      r.index = i;
      r.state = ReplicaState::Ready;
      r.processor_id = "p";
      rows.push_back(r);
    }
  }
  reg.refresh(ds, rows);
}

TEST(HubMetrics, SeriesPerDeploymentAndReplica) {
  ReplicaRegistry reg;
  fill(reg, {"risk"});
  HubMetrics m;
  m.count_request("risk", 0, 200);
  m.count_request("risk", 0, 200);
  m.count_request("risk", 1, 502);
  m.count_request("risk", -1, 429);
  m.count_retry("risk");
  m.count_failure("risk", 1);
  m.count_ejection("risk", 1);
  m.observe_queue_wait("risk", 0.02);
  m.observe_latency("risk", 0.3);
  m.observe_first_byte("risk", 0.1);
  m.add_completion_tokens("risk", 12);
  const auto inflight = reg.begin_request("risk", 0);
  const std::string text = m.prometheus_text(reg, {{"risk", 3}});
  for (const char* line : {
           "cellserve_hub_requests_total{deployment=\"risk\",replica=\"0\",status=\"200\"} 2",
           "cellserve_hub_requests_total{deployment=\"risk\",replica=\"1\",status=\"502\"} 1",
           "cellserve_hub_requests_total{deployment=\"risk\",replica=\"none\",status=\"429\"} 1",
           "cellserve_hub_retries_total{deployment=\"risk\"} 1",
           "cellserve_hub_replica_failures_total{deployment=\"risk\",replica=\"1\"} 1",
           "cellserve_hub_ejections_total{deployment=\"risk\",replica=\"1\"} 1",
           "cellserve_hub_completion_tokens_total{deployment=\"risk\"} 12",
           "cellserve_hub_completed_last_hour{deployment=\"risk\"} 2",
           "cellserve_hub_queue_length{deployment=\"risk\"} 3",
           "cellserve_hub_replica_in_flight{deployment=\"risk\",replica=\"0\"} 1",
           "cellserve_hub_replica_ready{deployment=\"risk\",replica=\"1\"} 1",
           "cellserve_hub_queue_wait_seconds_bucket{deployment=\"risk\",le=\"0.05\"} 1",
           "cellserve_hub_queue_wait_seconds_bucket{deployment=\"risk\",le=\"0.01\"} 0",
           "cellserve_hub_request_duration_seconds_bucket{deployment=\"risk\",le=\"+Inf\"} 1",
           "cellserve_hub_time_to_first_byte_seconds_count{deployment=\"risk\"} 1",
       }) {
    EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
  }
  EXPECT_EQ(m.completed_last_hour("risk"), 2);
  EXPECT_EQ(m.completed_last_hour("risk", 0), 2);
  EXPECT_EQ(m.completed_last_hour("risk", 1), 0);
  EXPECT_EQ(m.failures("risk", 1), 1);
}

TEST(HubMetrics, ARemovedDeploymentsSeriesAreDropped) {
  ReplicaRegistry reg;
  fill(reg, {"risk", "old"});
  HubMetrics m;
  m.count_request("old", 0, 200);
  EXPECT_NE(m.prometheus_text(reg, {}).find("deployment=\"old\""), std::string::npos);
  fill(reg, {"risk"});
  EXPECT_EQ(m.prometheus_text(reg, {}).find("deployment=\"old\""), std::string::npos);
  EXPECT_EQ(m.completed_last_hour("old"), 0);
}

TEST(HubMetrics, ClaimedSpeedBesideMeasuredAndTheInflatedFlag) {
  ReplicaRegistry reg;
  Deployment d;
  d.spec.name = "risk";
  d.spec.replicas = 1;
  Replica r;
  r.deployment = "risk";
  r.index = 0;
  r.state = ReplicaState::Ready;
  r.processor_id = "p";
  r.prefill_tps = 40000;
  r.decode_tps = 2500;  // 100x what it writes
  reg.refresh({d}, {r});
  HubMetrics m;
  const std::string before = m.prometheus_text(reg, {});
  EXPECT_NE(before.find("cellserve_hub_replica_speed_claim_inflated{deployment=\"risk\",replica=\"0\"} 0"),
            std::string::npos)
      << before;
  for (int i = 0; i < kTrustedSamples; ++i) reg.record_speed("risk", 0, "p", AnswerSample{40, 26, true, 0.1, 1.1});
  const std::string text = m.prometheus_text(reg, {});
  for (const char* series :
       {"cellserve_hub_replica_speed_tps{deployment=\"risk\",replica=\"0\",phase=\"decode\",source=\"claimed\"} 2500",
        "cellserve_hub_replica_speed_tps{deployment=\"risk\",replica=\"0\",phase=\"decode\",source=\"measured\"} 25",
        "cellserve_hub_replica_speed_tps{deployment=\"risk\",replica=\"0\",phase=\"decode\",source=\"routed\"} 25",
        "cellserve_hub_replica_speed_claim_inflated{deployment=\"risk\",replica=\"0\"} 1"}) {
    EXPECT_NE(text.find(series), std::string::npos) << series << "\n" << text;
  }
}

}  // namespace
}  // namespace cellserve::fleet
