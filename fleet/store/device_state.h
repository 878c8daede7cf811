// What an agent reports of its device with every status poll, beside its replicas: battery,
// heat, CPU throttling and free memory, read from Linux's standard sysfs and /proc interfaces
// (fleet/agent/device_sensors.h). A phone that hides a node reports it as unknown (nullopt), and
// nothing that needs it holds against the device. Live state: the hub keeps the last poll's in
// memory, never in its database. docs/phones.md.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>

namespace cellserve::fleet {

struct DeviceState {
  std::optional<int> battery_percent;    // 0..100
  std::optional<bool> charging;          // plugged in (charging or full)
  std::optional<double> battery_temp_c;  // the battery's own sensor
  std::optional<double> max_thermal_c;   // the hottest thermal zone
  // The lowest ratio over the CPUs of the current frequency ceiling (scaling_max_freq) to the
  // hardware's (cpuinfo_max_freq): 1 when unthrottled; nullopt when cpufreq is hidden.
  std::optional<double> cpu_freq_ratio;
  std::optional<uint64_t> mem_available_bytes;  // /proc/meminfo MemAvailable
  // Set by the agent when it takes no new requests (battery below its threshold and not
  // charging): the reason, in words. The hub routes nothing to a paused device.
  std::string paused;

  bool throttled() const { return cpu_freq_ratio && *cpu_freq_ratio < kThrottledBelow; }
  // The hottest reading, battery or zone; nullopt when neither is known.
  std::optional<double> temperature_c() const {
    if (battery_temp_c && max_thermal_c) return std::max(*battery_temp_c, *max_thermal_c);
    return battery_temp_c ? battery_temp_c : max_thermal_c;
  }

  // Below this frequency ratio the CPU counts as throttled (a governor's rounding stays above).
  static constexpr double kThrottledBelow = 0.95;
};

}  // namespace cellserve::fleet
