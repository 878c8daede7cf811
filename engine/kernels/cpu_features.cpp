#include "engine/kernels/cpu_features.h"

#if defined(__x86_64__)
#include <cpuid.h>
#elif defined(__aarch64__) && defined(__linux__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

namespace cellserve::engine::kernels {
namespace {

#if defined(__x86_64__)
// CPUID leaf / subleaf registers; all zero when the CPU does not have the leaf.
struct CpuidRegs {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
};

CpuidRegs cpuid(unsigned leaf, unsigned subleaf) {
  CpuidRegs r;
  if (__get_cpuid_count(leaf, subleaf, &r.eax, &r.ebx, &r.ecx, &r.edx) == 0) return {};
  return r;
}

bool bit(unsigned reg, int n) { return ((reg >> n) & 1u) != 0; }

// XCR0: which register states the OS saves on a context switch. Read only when CPUID says the OS
// enabled XSAVE (OSXSAVE), since XGETBV faults otherwise.
unsigned long long os_saved_states() {
  unsigned lo = 0, hi = 0;
  __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<unsigned long long>(hi) << 32) | lo;
}

// Read from CPUID directly (Intel SDM vol. 2, CPUID; the same bits for AMD) rather than through
// __builtin_cpu_supports, whose feature names differ between GCC and Clang: both compilers build
// this file (Clang for the sanitizer and fuzz CI stage).
CpuFeatures x86_features() {
  CpuFeatures f;
  const CpuidRegs l1 = cpuid(1, 0);
  if (!bit(l1.ecx, 27)) return f;  // OSXSAVE: no wide registers without it
  const unsigned long long xcr0 = os_saved_states();
  const bool os_ymm = (xcr0 & 0x6) == 0x6;              // SSE and AVX state
  const bool os_zmm = os_ymm && (xcr0 & 0xE0) == 0xE0;  // opmask, ZMM0-15 upper halves, ZMM16-31
  const CpuidRegs l7 = cpuid(7, 0);
  const CpuidRegs l7s1 = l7.eax >= 1 ? cpuid(7, 1) : CpuidRegs{};
  const bool avx = bit(l1.ecx, 28), fma = bit(l1.ecx, 12), f16c = bit(l1.ecx, 29);
  f.avx2 = os_ymm && avx && bit(l7.ebx, 5) && fma && f16c && bit(l7.ebx, 8);  // AVX2, BMI2
  f.avx_vnni = f.avx2 && bit(l7s1.eax, 4);
  f.avx512 = os_zmm && bit(l7.ebx, 16) && bit(l7.ebx, 30) && bit(l7.ebx, 31) && bit(l7.ebx, 17);  // F BW VL DQ
  f.avx512_vnni = f.avx512 && bit(l7.ecx, 11);
  f.avx512_bf16 = f.avx512 && bit(l7s1.eax, 5);
  return f;
}
#endif

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = [] {
    CpuFeatures f;
#if defined(__x86_64__)
    f = x86_features();
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
