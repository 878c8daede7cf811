// Device awareness read from fixture sysfs and /proc trees laid out as on real phones
// (tests/fleet/fixtures/devices/README.md).
#include "fleet/agent/device_sensors.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <unistd.h>

namespace cellserve::fleet {
namespace {

std::string fixture(const std::string& name) { return std::string(CELLSERVE_DEVICE_FIXTURES) + "/" + name; }

TEST(DeviceSensors, PixelOnUsbIsChargingCoolAndUnthrottled) {
  const DeviceState s = read_device_state(fixture("pixel-charging"));
  ASSERT_TRUE(s.battery_percent.has_value());
  EXPECT_EQ(*s.battery_percent, 64);
  EXPECT_EQ(s.charging, std::optional<bool>(true));
  EXPECT_DOUBLE_EQ(s.battery_temp_c.value(), 31.2);
  EXPECT_NEAR(s.max_thermal_c.value(), 35.214, 1e-9);
  EXPECT_DOUBLE_EQ(s.cpu_freq_ratio.value(), 1.0);
  EXPECT_FALSE(s.throttled());
  EXPECT_EQ(s.mem_available_bytes.value(), 4302144ull * 1024);
  EXPECT_EQ(battery_pause_reason(s, 20), "");
  EXPECT_EQ(battery_pause_reason(s, 90), "") << "charging never pauses";
}

TEST(DeviceSensors, GalaxyOnBatteryIsHotAndThrottled) {
  const DeviceState s = read_device_state(fixture("galaxy-discharging-hot"));
  EXPECT_EQ(s.battery_percent, std::optional<int>(15));
  EXPECT_EQ(s.charging, std::optional<bool>(false));
  EXPECT_DOUBLE_EQ(s.battery_temp_c.value(), 45.2);
  // The disconnected zone (-273 °C) is skipped; the hottest CPU zone counts.
  EXPECT_NEAR(s.max_thermal_c.value(), 49.1, 1e-9);
  EXPECT_NEAR(s.temperature_c().value(), 49.1, 1e-9);
  EXPECT_NEAR(s.cpu_freq_ratio.value(), 0.6, 1e-9);
  EXPECT_TRUE(s.throttled());
  EXPECT_EQ(battery_pause_reason(s, 20), "battery 15% below 20% and not charging; resumes when charging");
  EXPECT_EQ(battery_pause_reason(s, 15), "") << "at the threshold it still works";
  EXPECT_EQ(device_state_summary(s), "battery 15% discharging, 49.1 °C, throttled to 60%, 5.6 GiB free");
}

TEST(DeviceSensors, HiddenNodesAreUnknownAndNeverPause) {
  const DeviceState s = read_device_state(fixture("hidden-battery"));
  EXPECT_FALSE(s.battery_percent.has_value());
  EXPECT_FALSE(s.charging.has_value());
  EXPECT_FALSE(s.battery_temp_c.has_value());
  EXPECT_FALSE(s.max_thermal_c.has_value());
  EXPECT_FALSE(s.cpu_freq_ratio.has_value());
  EXPECT_FALSE(s.throttled());
  EXPECT_EQ(s.mem_available_bytes.value(), 2911412ull * 1024);
  EXPECT_EQ(battery_pause_reason(s, 100), "");
  EXPECT_EQ(device_state_summary(s), "2.8 GiB free");
}

TEST(DeviceSensors, FullBatteryCountsAsCharging) {
  const DeviceState s = read_device_state(fixture("tiny-memory"));
  EXPECT_EQ(s.charging, std::optional<bool>(true));
  EXPECT_EQ(s.mem_available_bytes.value(), 6144ull * 1024);
}

TEST(DeviceSensors, AMissingRootReadsNothing) {
  const DeviceState s = read_device_state("/nonexistent/cellserve-device-root");
  EXPECT_FALSE(s.battery_percent || s.charging || s.battery_temp_c || s.max_thermal_c || s.cpu_freq_ratio ||
               s.mem_available_bytes);
}

TEST(DeviceSensors, GarbageNodesAreIgnored) {
  namespace fs = std::filesystem;
  const fs::path root = fs::temp_directory_path() / ("cs-device-garbage-" + std::to_string(::getpid()));
  fs::create_directories(root / "sys/class/power_supply/battery");
  fs::create_directories(root / "sys/class/thermal/thermal_zone0");
  fs::create_directories(root / "sys/devices/system/cpu/cpu0/cpufreq");
  fs::create_directories(root / "proc");
  auto put = [&](const char* rel, const std::string& text) { std::ofstream(root / rel) << text; };
  put("sys/class/power_supply/battery/type", "Battery\n");
  put("sys/class/power_supply/battery/capacity", "250\n");               // out of range
  put("sys/class/power_supply/battery/temp", "12abc\n");                 // not a number
  put("sys/class/thermal/thermal_zone0/temp", std::string(10000, '9'));  // absurdly long
  put("sys/devices/system/cpu/cpu0/cpufreq/scaling_max_freq", "-5\n");
  put("sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq", "0\n");
  put("proc/meminfo", "MemAvailable: lots kB\n");
  const DeviceState s = read_device_state(root.string());
  EXPECT_FALSE(s.battery_percent.has_value());
  EXPECT_FALSE(s.battery_temp_c.has_value());
  EXPECT_FALSE(s.max_thermal_c.has_value());
  EXPECT_FALSE(s.cpu_freq_ratio.has_value());
  EXPECT_FALSE(s.mem_available_bytes.has_value());
  fs::remove_all(root);
}

}  // namespace
}  // namespace cellserve::fleet
