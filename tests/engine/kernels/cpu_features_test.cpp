// The CPU features we read from CPUID agree with the Linux kernel's own reading (/proc/cpuinfo),
// which, like ours, leaves out AVX and AVX-512 features whose registers the OS does not save.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "engine/kernels/cpu_features.h"

namespace cellserve::engine::kernels {
namespace {

#if defined(__x86_64__) && defined(__linux__)
std::set<std::string> proc_cpuinfo_flags() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    std::set<std::string> flags;
    for (std::string w; words >> w;) flags.insert(w);
    return flags;
  }
  return {};
}

TEST(CpuFeatures, AgreeWithTheKernelsCpuinfo) {
  const std::set<std::string> flags = proc_cpuinfo_flags();
  if (flags.empty()) GTEST_SKIP() << "no flags line in /proc/cpuinfo";
  auto has = [&](const char* name) { return flags.count(name) != 0; };
  const CpuFeatures& f = cpu_features();
  EXPECT_EQ(f.avx2, has("avx2") && has("fma") && has("f16c") && has("bmi2"));
  EXPECT_EQ(f.avx_vnni, f.avx2 && has("avx_vnni"));
  const bool avx512 = has("avx512f") && has("avx512bw") && has("avx512vl") && has("avx512dq");
  EXPECT_EQ(f.avx512, avx512);
  EXPECT_EQ(f.avx512_vnni, avx512 && has("avx512_vnni"));
  EXPECT_EQ(f.avx512_bf16, avx512 && has("avx512_bf16"));
  EXPECT_FALSE(f.neon || f.dotprod || f.i8mm);
}
#elif defined(__aarch64__)
TEST(CpuFeatures, NeonIsAlwaysThereAndI8mmImpliesDotprod) {
  const CpuFeatures& f = cpu_features();
  EXPECT_TRUE(f.neon);
  EXPECT_TRUE(!f.i8mm || f.dotprod);
  EXPECT_FALSE(f.avx2 || f.avx512);
}
#endif

}  // namespace
}  // namespace cellserve::engine::kernels
