// Which CPUs the engine's threads should use by default. A decode step is as slow as its slowest
// thread, so a thread on an efficiency ("little") core of a big.LITTLE phone, or on the second
// hardware thread of a busy core, slows every step instead of helping.
#pragma once

#include <filesystem>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace cellserve::engine {

// The CPUs of `cpus` worth a compute thread, read from Linux's sysfs CPU folder
// (/sys/devices/system/cpu): one CPU per physical core (topology/thread_siblings_list), and of
// those only the performance cores — cpu_capacity (or, failing that, cpufreq/cpuinfo_max_freq) at
// least half of the largest. Where sysfs says nothing, every CPU counts. Never empty when `cpus`
// is not.
std::vector<int> performance_cpus(const std::vector<int>& cpus, const std::filesystem::path& sysfs_cpu_dir);

// The CPUs of `cpus` in the fastest cluster of a big.LITTLE CPU (capacity or maximum frequency at
// least half of the best one's), hardware threads included; all of `cpus` on a uniform CPU or
// where sysfs says nothing.
std::vector<int> fastest_cluster(const std::vector<int>& cpus, const std::filesystem::path& sysfs_cpu_dir);

// The default thread count: performance_cpus() of the CPUs this process may run on (>= 1).
int default_thread_count();

// The CPUs this process may run on now (sched_getaffinity), in order.
std::vector<int> allowed_cpus();

// "0-3,6" (Linux's cpulist format) into CPU numbers, ascending and unique; InvalidArgument naming
// the bad item. At most CPU_SETSIZE.
Result<std::vector<int>> parse_cpu_list(std::string_view text);

// "0-3,6" from CPU numbers (ascending).
std::string cpu_list_text(const std::vector<int>& cpus);

// Keeps the calling thread, and so every thread it starts afterwards (the forward pass's pool, the
// server's), on `cpus` (--cpus) or, when empty, on the fastest cluster of the CPUs it may use
// where that is a strict subset (a phone's big cores; a uniform CPU is left alone).
// default_thread_count() then follows: one thread per physical core of those. Call it before any
// thread starts. Returns the CPUs now used; InvalidArgument when `cpus` names none this process
// may use.
Result<std::vector<int>> pin_to_compute_cpus(const std::vector<int>& cpus,
                                             const std::filesystem::path& sysfs_cpu_dir = "/sys/devices/system/cpu");

}  // namespace cellserve::engine
