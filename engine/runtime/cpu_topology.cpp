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
  // Performance cores: capacity (arm64's scheduler figure) or maximum frequency at least half of
  // the best core's. Mid cores of three-tier phones (e.g. 1024/870/380) stay in, little ones go.
  for (const char* metric : {"cpu_capacity", "cpufreq/cpuinfo_max_freq"}) {
    std::vector<long> values;
    for (int cpu : cores) values.push_back(read_first_number(sysfs_cpu_dir / ("cpu" + std::to_string(cpu)) / metric));
    if (values.empty() || std::any_of(values.begin(), values.end(), [](long v) { return v <= 0; })) continue;
    const long best = *std::max_element(values.begin(), values.end());
    std::vector<int> fast;
    for (size_t i = 0; i < cores.size(); ++i) {
      if (values[i] * 2 >= best) fast.push_back(cores[i]);
    }
    return fast;
  }
  return cores;
}

int default_thread_count() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
    }
  }
  if (cpus.empty()) return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  return std::max<int>(1, static_cast<int>(performance_cpus(cpus, "/sys/devices/system/cpu").size()));
}

}  // namespace cellserve::engine
