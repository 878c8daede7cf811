// Which CPUs the engine's threads should use by default. A decode step is as slow as its slowest
// thread, so a thread on an efficiency ("little") core of a big.LITTLE phone, or on the second
// hardware thread of a busy core, slows every step instead of helping.
#pragma once

#include <filesystem>
#include <vector>

namespace cellserve::engine {

// The CPUs of `cpus` worth a compute thread, read from Linux's sysfs CPU folder
// (/sys/devices/system/cpu): one CPU per physical core (topology/thread_siblings_list), and of
// those only the performance cores — cpu_capacity (or, failing that, cpufreq/cpuinfo_max_freq) at
// least half of the largest. Where sysfs says nothing, every CPU counts. Never empty when `cpus`
// is not.
std::vector<int> performance_cpus(const std::vector<int>& cpus, const std::filesystem::path& sysfs_cpu_dir);

// The default thread count: performance_cpus() of the CPUs this process may run on (>= 1).
int default_thread_count();

}  // namespace cellserve::engine
