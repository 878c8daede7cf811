// Default thread placement from a fake sysfs CPU folder: hyperthread siblings, big.LITTLE.
#include "engine/runtime/cpu_topology.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <fstream>
#include <string>
#include <thread>

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

TEST(CpuTopology, FastestClusterKeepsHardwareThreads) {
  FakeSysfs sys;
  const int capacity[8] = {380, 380, 380, 380, 870, 870, 870, 1024};
  for (int cpu = 0; cpu < 8; ++cpu) sys.write(cpu, "cpu_capacity", std::to_string(capacity[cpu]));
  EXPECT_EQ(fastest_cluster({0, 1, 2, 3, 4, 5, 6, 7}, sys.root()), (std::vector<int>{4, 5, 6, 7}));
  FakeSysfs uniform;
  EXPECT_EQ(fastest_cluster({0, 1, 2}, uniform.root()), (std::vector<int>{0, 1, 2}));
}

TEST(CpuList, ParsesLinuxCpulistSyntax) {
  EXPECT_EQ(*parse_cpu_list("0-3,6"), (std::vector<int>{0, 1, 2, 3, 6}));
  EXPECT_EQ(*parse_cpu_list("7,3,3,4-5"), (std::vector<int>{3, 4, 5, 7}));
  EXPECT_EQ(*parse_cpu_list("5"), (std::vector<int>{5}));
  for (const char* bad : {"", "a", "3-1", "1,,2", "1-", "-1", "99999", "1024", "0x1", "1 2"}) {
    const auto r = parse_cpu_list(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::InvalidArgument) << bad;
    EXPECT_NE(r.status().message().find("--cpus"), std::string::npos) << r.status().message();
  }
  EXPECT_EQ(cpu_list_text({0, 1, 2, 3, 6, 8, 9}), "0-3,6,8-9");
  EXPECT_EQ(cpu_list_text({}), "");
  EXPECT_EQ(*parse_cpu_list(cpu_list_text({1, 4, 5, 6, 11})), (std::vector<int>{1, 4, 5, 6, 11}));
}

// Pinning changes the calling thread's affinity, so each case runs on a thread of its own.
template <typename F>
void on_own_thread(F f) {
  std::thread(f).join();
}

TEST(PinToComputeCpus, AnExplicitListIsKeptAndTheThreadCountFollowsIt) {
  const std::vector<int> allowed = allowed_cpus();
  ASSERT_FALSE(allowed.empty());
  on_own_thread([&] {
    const auto pinned = pin_to_compute_cpus({allowed.back()});
    ASSERT_TRUE(pinned.ok()) << pinned.status().to_string();
    EXPECT_EQ(*pinned, (std::vector<int>{allowed.back()}));
    EXPECT_EQ(allowed_cpus(), (std::vector<int>{allowed.back()}));
    EXPECT_EQ(default_thread_count(), 1);
    std::vector<int> seen;
    std::thread([&] { seen = allowed_cpus(); }).join();
    EXPECT_EQ(seen, (std::vector<int>{allowed.back()})) << "threads started afterwards inherit it";
  });
  EXPECT_EQ(allowed_cpus(), allowed) << "the test thread itself is untouched";
}

TEST(PinToComputeCpus, ACpuThisProcessMayNotUseIsAnError) {
  on_own_thread([] {
    const auto pinned = pin_to_compute_cpus({CPU_SETSIZE - 1});
    ASSERT_FALSE(pinned.ok());
    EXPECT_EQ(pinned.status().code(), StatusCode::InvalidArgument);
    EXPECT_NE(pinned.status().message().find("none of them is available"), std::string::npos)
        << pinned.status().message();
  });
}

TEST(PinToComputeCpus, ByDefaultTheBigCoresOfABigLittleCpu) {
  const std::vector<int> allowed = allowed_cpus();
  if (allowed.size() < 2) GTEST_SKIP() << "needs two CPUs to tell a big core from a little one";
  FakeSysfs sys;
  for (const int cpu : allowed) sys.write(cpu, "cpu_capacity", cpu == allowed.back() ? "1024" : "300");
  on_own_thread([&] {
    const auto pinned = pin_to_compute_cpus({}, sys.root());
    ASSERT_TRUE(pinned.ok()) << pinned.status().to_string();
    EXPECT_EQ(*pinned, (std::vector<int>{allowed.back()}));
    EXPECT_EQ(allowed_cpus(), (std::vector<int>{allowed.back()}));
  });
  FakeSysfs uniform;
  on_own_thread([&] {
    const auto pinned = pin_to_compute_cpus({}, uniform.root());
    ASSERT_TRUE(pinned.ok());
    EXPECT_EQ(*pinned, allowed) << "a uniform CPU is left alone";
    EXPECT_EQ(allowed_cpus(), allowed);
  });
}

}  // namespace
}  // namespace cellserve::engine
