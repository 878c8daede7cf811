#include "fleet/agent/device_sensors.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

namespace cellserve::fleet {
namespace {

namespace fs = std::filesystem;

// Sysfs nodes are one short line; a bigger read is not one of them.
constexpr std::streamsize kMaxNodeBytes = 4096;
// Directories scanned per class: far above any real device, so a hostile tree cannot make a
// status poll slow.
constexpr int kMaxEntries = 512;

std::optional<std::string> read_line(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::string text(static_cast<size_t>(kMaxNodeBytes), '\0');
  in.read(text.data(), kMaxNodeBytes);
  text.resize(static_cast<size_t>(in.gcount()));
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ' || text.back() == '\r')) text.pop_back();
  if (const size_t nl = text.find('\n'); nl != std::string::npos) text.resize(nl);
  return text;
}

std::optional<int64_t> read_int(const fs::path& path) {
  const auto text = read_line(path);
  if (!text || text->empty()) return std::nullopt;
  int64_t v = 0;
  const char* end = text->data() + text->size();
  const auto [p, ec] = std::from_chars(text->data(), end, v);
  if (ec != std::errc() || p != end) return std::nullopt;
  return v;
}

// The entries of `dir` (sorted, so the result does not depend on the file system's order).
std::vector<fs::path> entries(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end && static_cast<int>(out.size()) < kMaxEntries;
       it.increment(ec)) {
    out.push_back(it->path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// A thermal zone's reading in °C: millidegrees by the ABI, though some vendor zones report
// whole degrees. Readings outside what a working phone can show (a disconnected sensor reads
// -273 or 0xffff...) are skipped.
std::optional<double> zone_celsius(int64_t raw) {
  const double c = (raw > 1000 || raw < -1000) ? static_cast<double>(raw) / 1000.0 : static_cast<double>(raw);
  if (c < -40 || c > 150) return std::nullopt;
  return c;
}

void read_power_supplies(const fs::path& dir, DeviceState* s) {
  bool charger_online = false;
  bool battery_says_charging = false;
  for (const fs::path& supply : entries(dir)) {
    const std::string type = read_line(supply / "type").value_or("");
    if (type == "Battery") {
      if (s->battery_percent) continue;  // the first battery (a phone has one; BAT0 before BAT1)
      if (read_int(supply / "present") == int64_t{0}) continue;
      if (const auto cap = read_int(supply / "capacity"); cap && *cap >= 0 && *cap <= 100) {
        s->battery_percent = static_cast<int>(*cap);
      }
      // POWER_SUPPLY_STATUS: "Charging", "Full", "Discharging", "Not charging" (plugged in, but
      // the charger holds the level: still on mains), "Unknown".
      const std::string status = read_line(supply / "status").value_or("");
      if (status == "Charging" || status == "Full" || status == "Not charging") battery_says_charging = true;
      if (status == "Discharging") s->charging = false;
      // Tenths of a degree Celsius.
      if (const auto t = read_int(supply / "temp"); t && *t > -400 && *t < 1500) {
        s->battery_temp_c = static_cast<double>(*t) / 10.0;
      }
    } else if (type == "Mains" || type == "USB" || type == "Wireless" || type.starts_with("USB_")) {
      if (read_int(supply / "online").value_or(0) == 1) charger_online = true;
    }
  }
  if (battery_says_charging || charger_online) {
    s->charging = true;
  } else if (!s->charging && s->battery_percent) {
    s->charging = false;  // a battery with an unknown status and no charger online
  }
}

void read_thermal_zones(const fs::path& dir, DeviceState* s) {
  for (const fs::path& zone : entries(dir)) {
    if (!zone.filename().string().starts_with("thermal_zone")) continue;
    const auto raw = read_int(zone / "temp");
    if (!raw) continue;
    const auto c = zone_celsius(*raw);
    if (c && (!s->max_thermal_c || *c > *s->max_thermal_c)) s->max_thermal_c = c;
  }
}

void read_cpufreq(const fs::path& dir, DeviceState* s) {
  for (const fs::path& cpu : entries(dir)) {
    const std::string name = cpu.filename().string();
    if (!name.starts_with("cpu") || name.size() < 4 ||
        !std::all_of(name.begin() + 3, name.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      continue;
    }
    const auto ceiling = read_int(cpu / "cpufreq" / "scaling_max_freq");
    const auto hardware = read_int(cpu / "cpufreq" / "cpuinfo_max_freq");
    if (!ceiling || !hardware || *hardware <= 0 || *ceiling <= 0) continue;
    const double ratio = std::min(1.0, static_cast<double>(*ceiling) / static_cast<double>(*hardware));
    if (!s->cpu_freq_ratio || ratio < *s->cpu_freq_ratio) s->cpu_freq_ratio = ratio;
  }
}

}  // namespace

DeviceState read_device_state(const std::string& root) {
  const fs::path base = root.empty() ? fs::path("/") : fs::path(root);
  DeviceState s;
  read_power_supplies(base / "sys/class/power_supply", &s);
  read_thermal_zones(base / "sys/class/thermal", &s);
  read_cpufreq(base / "sys/devices/system/cpu", &s);
  s.mem_available_bytes = read_meminfo_bytes(root, "MemAvailable");
  return s;
}

std::string battery_pause_reason(const DeviceState& s, int min_battery) {
  if (!s.battery_percent || s.charging.value_or(false) || *s.battery_percent >= min_battery) return "";
  return "battery " + std::to_string(*s.battery_percent) + "% below " + std::to_string(min_battery) +
         "% and not charging; resumes when charging";
}

}  // namespace cellserve::fleet
