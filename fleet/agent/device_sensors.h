// Reads the device's battery, heat, CPU throttling and free memory from Linux's standard
// interfaces: /sys/class/power_supply (battery capacity, status, temp; chargers' online),
// /sys/class/thermal/thermal_zone*/temp, /sys/devices/system/cpu/cpu*/cpufreq
// (scaling_max_freq against cpuinfo_max_freq) and /proc/meminfo (MemAvailable). A node the
// device hides (Android without root hides the battery and thermal nodes on many phones) is
// left unknown. docs/phones.md lists the paths.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/meminfo.h"
#include "fleet/spec/device_state.h"

namespace cellserve::fleet {

// `root` prefixes every path ("" : the real /sys and /proc); tests point it at a fixture tree
// (tests/fleet/fixtures/devices). Never fails: what cannot be read is nullopt.
DeviceState read_device_state(const std::string& root = "");

// /proc/meminfo's fields, below `root` as above.
using cellserve::read_meminfo_bytes;

// Why an agent on this device should take no new requests, or "" when it may: the battery is
// known, below `min_battery` percent, and not charging. A battery the device hides never pauses.
std::string battery_pause_reason(const DeviceState& state, int min_battery);

}  // namespace cellserve::fleet
