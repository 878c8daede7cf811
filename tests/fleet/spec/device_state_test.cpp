#include "fleet/spec/device_state.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

namespace cellserve::fleet {
namespace {

namespace json = boost::json;

TEST(DeviceState, RoundTripsAndOmitsUnknowns) {
  DeviceState s;
  s.battery_percent = 42;
  s.charging = false;
  s.battery_temp_c = 38.5;
  s.cpu_freq_ratio = 0.75;
  s.mem_available_bytes = 3ull << 30;
  s.paused = "battery 12% below 20% and not charging; resumes when charging";
  const json::value v = to_json(s);
  EXPECT_FALSE(v.as_object().contains("max_thermal_c"));
  auto back = device_state_from_json(v);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->battery_percent, s.battery_percent);
  EXPECT_EQ(back->charging, s.charging);
  EXPECT_EQ(back->battery_temp_c, s.battery_temp_c);
  EXPECT_FALSE(back->max_thermal_c.has_value());
  EXPECT_EQ(back->cpu_freq_ratio, s.cpu_freq_ratio);
  EXPECT_EQ(back->mem_available_bytes, s.mem_available_bytes);
  EXPECT_EQ(back->paused, s.paused);
  EXPECT_TRUE(back->throttled());
}

TEST(DeviceState, RefusesWhatNoDeviceReports) {
  for (const char* text :
       {R"({"battery_percent": 101})", R"({"battery_percent": 50.5})", R"({"charging": "yes"})",
        R"({"cpu_freq_ratio": 1.5})", R"({"max_thermal_c": 1e300})", R"({"mem_available_bytes": -1})",
        R"({"paused": 7})", R"({"paused": "two\nlines"})", R"([1, 2])"}) {
    EXPECT_FALSE(device_state_from_json(json::parse(text)).ok()) << text;
  }
  EXPECT_FALSE(device_state_from_json(json::value(json::object{{"paused", std::string(1000, 'x')}})).ok());
  EXPECT_TRUE(device_state_from_json(json::parse(R"({"future_sensor": 1})")).ok()) << "unknown keys are ignored";
  // Other control characters (a terminal escape) are stripped from the reason operators read.
  auto escaped = device_state_from_json(json::parse(R"({"paused": "low\u001b[2Jbattery\u202e"})"));
  ASSERT_TRUE(escaped.ok()) << escaped.status().message();
  EXPECT_EQ(escaped->paused, "low[2Jbattery");
}

TEST(DeviceState, SummaryShowsWhatIsKnown) {
  EXPECT_EQ(device_state_summary({}), "");
  DeviceState s;
  s.battery_percent = 80;
  s.charging = true;
  s.max_thermal_c = 36.04;
  s.cpu_freq_ratio = 0.97;  // a governor's rounding: not throttled
  EXPECT_EQ(device_state_summary(s), "battery 80% charging, 36.0 °C");
}

}  // namespace
}  // namespace cellserve::fleet
