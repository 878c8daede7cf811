// The autoscaling keys of a deployment spec (fleet/spec/autoscale_spec.h): read from TOML, each
// error naming its key, written back in the API's form, and the durations they take.
#include "fleet/spec/autoscale_spec.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "fleet/spec/deployment_spec.h"

namespace cellserve::fleet {
namespace {

Result<DeploymentSpec> parse_scaled(const std::string& top, const std::string& tables = "") {
  // Top-level keys come before the first table.
  const std::string text = "name = \"nightly\"\nmax_price_per_day = 0.5\n" + top +
                           "\n[model]\nurl = \"https://h/m.gguf\"\n" + "sha256 = \"" + std::string(64, 'a') + "\"\n" +
                           tables;
  CS_ASSIGN_OR_RETURN(boost::json::value v, toml_to_json(text, "spec.toml"));
  return parse_deployment_spec(v);
}

std::string scaling_error(const std::string& top, const std::string& tables = "") {
  auto r = parse_scaled(top, tables);
  return r.ok() ? "ok" : r.status().message();
}

TEST(AutoscaleSpec, ReadsEveryKeyAndStartsAtMinReplicas) {
  auto spec = parse_scaled(
      "min_replicas = 2\nmax_replicas = 50\nmax_total_price_per_day = 20\ntarget_wait_s = 2.5\n"
      "batch_deadline = \"4h\"\ncooldown_s = 120",
      "[[schedule]]\ncron = \"0 1 * * *\"\nreplicas = 50\nfor = \"4h\"\n");
  ASSERT_TRUE(spec.ok()) << spec.status().to_string();
  const AutoscaleSettings& a = spec->autoscale;
  EXPECT_TRUE(a.enabled());
  EXPECT_EQ(spec->replicas, 2);
  EXPECT_EQ(a.min_replicas, 2);
  EXPECT_EQ(a.max_replicas, 50);
  EXPECT_EQ(a.max_total_price_per_day, 20);
  EXPECT_EQ(a.target_wait_s, 2.5);
  EXPECT_EQ(a.batch_deadline_s, 4 * 3600);
  EXPECT_EQ(a.cooldown_s, 120);
  ASSERT_EQ(a.schedules.size(), 1u);
  EXPECT_EQ(a.schedules[0], (ScheduleWindow{"0 1 * * *", 50, 4 * 3600}));
  // The API's form reads back to the same spec.
  auto again = parse_deployment_spec(deployment_spec_json(*spec, true));
  ASSERT_TRUE(again.ok()) << again.status().to_string();
  EXPECT_EQ(*again, *spec);
  EXPECT_EQ(deployment_spec_json(*spec, true).at("batch_deadline"), "4h");
  // replicas, when given too, is where it starts.
  auto start = parse_scaled("replicas = 5\nmin_replicas = 2\nmax_replicas = 50");
  ASSERT_TRUE(start.ok());
  EXPECT_EQ(start->replicas, 5);
}

TEST(AutoscaleSpec, EachMistakeIsNamed) {
  EXPECT_EQ(scaling_error("min_replicas = 2"), "min_replicas and max_replicas go together (autoscaling between them)");
  EXPECT_EQ(scaling_error("min_replicas = 3\nmax_replicas = 2"), "min_replicas 3 is above max_replicas 2");
  EXPECT_EQ(scaling_error("replicas = 9\nmin_replicas = 1\nmax_replicas = 4"),
            "replicas 9 (the count to start with) must lie between min_replicas and max_replicas");
  EXPECT_EQ(scaling_error("cooldown_s = 60"), "cooldown_s needs min_replicas and max_replicas");
  EXPECT_EQ(scaling_error("min_replicas = 4\nmax_replicas = 8\nmax_total_price_per_day = 1"),
            "max_total_price_per_day 1 cannot pay for min_replicas 4 at max_price_per_day 0.5");
  EXPECT_EQ(scaling_error("min_replicas = 1\nmax_replicas = 8\nbatch_deadline = \"4 hours\""),
            "batch_deadline: \"4 hours\" is not a duration such as 90s, 15m, 4h, 2d or 1h30m");
  EXPECT_EQ(scaling_error("min_replicas = 1\nmax_replicas = 8\nbatch_deadline = \"10s\""),
            "batch_deadline must be between 1m and 30d");
  EXPECT_EQ(scaling_error("min_replicas = 1\nmax_replicas = 8\ntarget_wait_s = 0"),
            "target_wait_s must be in [0.1, 86400]");
  const std::string window = "min_replicas = 1\nmax_replicas = 8";
  EXPECT_EQ(scaling_error(window, "[[schedule]]\ncron = \"0 25 * * *\"\nreplicas = 2\nfor = \"1h\"\n"),
            "schedule[0].cron: cron '0 25 * * *': hour 25 is outside 0-23");
  EXPECT_EQ(scaling_error(window, "[[schedule]]\ncron = \"0 1 * * *\"\nreplicas = 9\nfor = \"1h\"\n"),
            "schedule[0].replicas 9 is above max_replicas 8");
  EXPECT_EQ(scaling_error(window, "[[schedule]]\ncron = \"0 1 * * *\"\nreplicas = 2\n"),
            "schedule[0].for is required (how long the window lasts)");
  EXPECT_EQ(scaling_error(window, "[[schedule]]\ncron = \"0 1 * * *\"\nreplicas = 2\nfor = \"8d\"\n"),
            "schedule[0].for must be between 1m and 7d");
  EXPECT_EQ(scaling_error(window, "[[schedule]]\ncron = \"0 1 * * *\"\nreplicas = 2\nfor = \"1h\"\nzone = \"CET\"\n"),
            "schedule[0].zone is not a known key");
}

TEST(AutoscaleSpec, DurationsReadAndWriteBack) {
  EXPECT_EQ(*parse_duration_s("90s"), 90);
  EXPECT_EQ(*parse_duration_s("1h30m"), 5400);
  EXPECT_EQ(*parse_duration_s("2d"), 2 * 86400);
  for (const char* bad : {"", "4", "h", "30m1h", "1h1h", "-1h", "1.5h", "400d", "99999999999999999999s"}) {
    EXPECT_FALSE(parse_duration_s(bad).ok()) << bad;
  }
  EXPECT_EQ(format_duration_s(5400), "1h30m");
  EXPECT_EQ(format_duration_s(90061), "1d1h1m1s");
  EXPECT_EQ(format_duration_s(0), "0s");
}

}  // namespace
}  // namespace cellserve::fleet
