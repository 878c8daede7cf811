// Default thread placement from a fake sysfs CPU folder: hyperthread siblings, big.LITTLE.
#include "engine/runtime/cpu_topology.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <fstream>
#include <string>

namespace cellserve::engine {
namespace {

class FakeSysfs {
 public:
  FakeSysfs() : root_(std::filesystem::temp_directory_path() / ("cs_sysfs_" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(root_);
  }
  ~FakeSysfs() { std::filesystem::remove_all(root_); }
  void write(int cpu, const std::string& file, const std::string& text) {
    const auto path = root_ / ("cpu" + std::to_string(cpu)) / file;
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path) << text << "\n";
  }
  const std::filesystem::path& root() const { return root_; }

 private:
  std::filesystem::path root_;
};

TEST(CpuTopology, NothingKnownMeansEveryCpu) {
  FakeSysfs sys;
  EXPECT_EQ(performance_cpus({0, 1, 2}, sys.root()), (std::vector<int>{0, 1, 2}));
}

TEST(CpuTopology, OneThreadPerPhysicalCore) {
  FakeSysfs sys;
  // Two cores with two hardware threads each, numbered like Linux does on x86 (0/2 and 1/3).
  sys.write(0, "topology/thread_siblings_list", "0,2");
  sys.write(2, "topology/thread_siblings_list", "0,2");
  sys.write(1, "topology/thread_siblings_list", "1,3");
  sys.write(3, "topology/thread_siblings_list", "1,3");
  EXPECT_EQ(performance_cpus({0, 1, 2, 3}, sys.root()), (std::vector<int>{0, 1}));
  // A sibling we may not use does not hide one we may.
  EXPECT_EQ(performance_cpus({2, 3}, sys.root()), (std::vector<int>{2, 3}));
}

TEST(CpuTopology, LittleCoresOfAPhoneAreLeftOut) {
  FakeSysfs sys;
  // 4 little (capacity 380), 3 mid (870), 1 prime (1024).
  const int capacity[8] = {380, 380, 380, 380, 870, 870, 870, 1024};
  for (int cpu = 0; cpu < 8; ++cpu) sys.write(cpu, "cpu_capacity", std::to_string(capacity[cpu]));
  EXPECT_EQ(performance_cpus({0, 1, 2, 3, 4, 5, 6, 7}, sys.root()), (std::vector<int>{4, 5, 6, 7}));
  // Restricted to the little cluster (taskset), those are all we have.
  EXPECT_EQ(performance_cpus({0, 1}, sys.root()), (std::vector<int>{0, 1}));
}

TEST(CpuTopology, MaxFrequencyWhenNoCapacity) {
  FakeSysfs sys;
  sys.write(0, "cpufreq/cpuinfo_max_freq", "1800000");
  sys.write(1, "cpufreq/cpuinfo_max_freq", "1800000");
  sys.write(2, "cpufreq/cpuinfo_max_freq", "3000000");
  sys.write(3, "cpufreq/cpuinfo_max_freq", "3000000");
  EXPECT_EQ(performance_cpus({0, 1, 2, 3}, sys.root()), (std::vector<int>{0, 1, 2, 3}));
  sys.write(0, "cpufreq/cpuinfo_max_freq", "1000000");
  EXPECT_EQ(performance_cpus({0, 1, 2, 3}, sys.root()), (std::vector<int>{1, 2, 3}));
}

TEST(CpuTopology, DefaultIsAtLeastOne) { EXPECT_GE(default_thread_count(), 1); }

}  // namespace
}  // namespace cellserve::engine
