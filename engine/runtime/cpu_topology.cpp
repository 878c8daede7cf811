#include "engine/runtime/cpu_topology.h"

#include <sched.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <string>
#include <thread>

namespace cellserve::engine {
namespace {

// The first integer in a sysfs file ("1024", "0-1", "0,4"), or -1 when absent or unreadable.
long read_first_number(const std::filesystem::path& file) {
  std::ifstream in(file);
  long value = -1;
  if (!(in >> value)) return -1;
  return value;
}

}  // namespace

std::vector<int> performance_cpus(const std::vector<int>& cpus, const std::filesystem::path& sysfs_cpu_dir) {
  // One CPU per physical core: the first of its hardware-thread siblings that we may use.
  std::vector<int> cores;
  std::set<long> seen_cores;
  for (int cpu : cpus) {
    const auto dir = sysfs_cpu_dir / ("cpu" + std::to_string(cpu));
    const long first_sibling = read_first_number(dir / "topology" / "thread_siblings_list");
    if (first_sibling >= 0 && !seen_cores.insert(first_sibling).second) continue;
    cores.push_back(cpu);
  }
  return fastest_cluster(cores, sysfs_cpu_dir);
}

std::vector<int> fastest_cluster(const std::vector<int>& cpus, const std::filesystem::path& sysfs_cpu_dir) {
  // Performance cores: capacity (arm64's scheduler figure) or maximum frequency at least half of
  // the best core's. Mid cores of three-tier phones (e.g. 1024/870/380) stay in, little ones go.
  for (const char* metric : {"cpu_capacity", "cpufreq/cpuinfo_max_freq"}) {
    std::vector<long> values;
    for (int cpu : cpus) values.push_back(read_first_number(sysfs_cpu_dir / ("cpu" + std::to_string(cpu)) / metric));
    if (values.empty() || std::any_of(values.begin(), values.end(), [](long v) { return v <= 0; })) continue;
    const long best = *std::max_element(values.begin(), values.end());
    std::vector<int> fast;
    for (size_t i = 0; i < cpus.size(); ++i) {
      if (values[i] * 2 >= best) fast.push_back(cpus[i]);
    }
    return fast;
  }
  return cpus;
}

std::vector<int> allowed_cpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
    }
  }
  return cpus;
}

Result<std::vector<int>> parse_cpu_list(std::string_view text) {
  std::set<int> cpus;
  const auto bad = [&](std::string_view item) {
    return Status::invalid_argument("--cpus " + std::string(text) + ": '" + std::string(item) +
                                    "' is not a CPU number or range (e.g. 4-7 or 0,2)");
  };
  const auto number = [](std::string_view digits, int* out) {
    if (digits.empty() || digits.size() > 4) return false;
    int v = 0;
    for (const char c : digits) {
      if (c < '0' || c > '9') return false;
      v = v * 10 + (c - '0');
    }
    *out = v;
    return v < CPU_SETSIZE;
  };
  if (text.empty()) return bad(text);
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string_view item = text.substr(start, comma - start);
    const size_t dash = item.find('-');
    int lo = 0;
    int hi = 0;
    if (dash == std::string_view::npos) {
      if (!number(item, &lo)) return bad(item);
      hi = lo;
    } else if (!number(item.substr(0, dash), &lo) || !number(item.substr(dash + 1), &hi) || hi < lo) {
      return bad(item);
    }
    for (int cpu = lo; cpu <= hi; ++cpu) cpus.insert(cpu);
    start = comma + 1;
  }
  return std::vector<int>(cpus.begin(), cpus.end());
}

std::string cpu_list_text(const std::vector<int>& cpus) {
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(cpus[i]);
    if (j > i) out += "-" + std::to_string(cpus[j]);
    i = j + 1;
  }
  return out;
}

Result<std::vector<int>> pin_to_compute_cpus(const std::vector<int>& cpus, const std::filesystem::path& sysfs_cpu_dir) {
  const std::vector<int> allowed = allowed_cpus();
  std::vector<int> chosen;
  if (!cpus.empty()) {
    for (int cpu : cpus) {
      if (std::find(allowed.begin(), allowed.end(), cpu) != allowed.end()) chosen.push_back(cpu);
    }
    if (chosen.empty()) {
      return Status::invalid_argument("--cpus " + cpu_list_text(cpus) +
                                      ": none of them is available (this process may use " + cpu_list_text(allowed) +
                                      ")");
    }
  } else {
    chosen = fastest_cluster(allowed, sysfs_cpu_dir);
    if (chosen.empty() || chosen.size() == allowed.size()) return allowed;
  }
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int cpu : chosen) CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0) {
    return Status::internal("cannot keep the threads on CPUs " + cpu_list_text(chosen) + ": sched_setaffinity failed");
  }
  return chosen;
}

int default_thread_count() {
  const std::vector<int> cpus = allowed_cpus();
  if (cpus.empty()) return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  return std::max<int>(1, static_cast<int>(performance_cpus(cpus, "/sys/devices/system/cpu").size()));
}

}  // namespace cellserve::engine
