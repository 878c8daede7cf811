#include "engine/kernels/cpu_features.h"

#if defined(__aarch64__) && defined(__linux__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

namespace cellserve::engine::kernels {

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = [] {
    CpuFeatures f;
#if defined(__x86_64__)
    __builtin_cpu_init();
    f.avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c") &&
             __builtin_cpu_supports("bmi2");
    f.avx_vnni = f.avx2 && __builtin_cpu_supports("avxvnni");
    f.avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
    f.avx512_vnni = f.avx512 && __builtin_cpu_supports("avx512vnni");
    f.avx512_bf16 = f.avx512 && __builtin_cpu_supports("avx512bf16");
#elif defined(__aarch64__)
    f.neon = true;
#if defined(__linux__)
    const unsigned long hwcap = getauxval(AT_HWCAP);
    const unsigned long hwcap2 = getauxval(AT_HWCAP2);
#if defined(HWCAP_ASIMDDP)
    f.dotprod = (hwcap & HWCAP_ASIMDDP) != 0;
#endif
#if defined(HWCAP2_I8MM)
    f.i8mm = f.dotprod && (hwcap2 & HWCAP2_I8MM) != 0;
#endif
    (void)hwcap;
    (void)hwcap2;
#endif
#endif
    return f;
  }();
  return features;
}

}  // namespace cellserve::engine::kernels
