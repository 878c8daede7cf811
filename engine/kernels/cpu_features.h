// What the host CPU can run, read once: x86 from CPUID (checking with XGETBV that the OS saves
// the wide registers), ARM from the kernel's hardware capabilities.
#pragma once

namespace cellserve::engine::kernels {

struct CpuFeatures {
  // x86-64
  bool avx2 = false;      // with FMA, F16C and BMI2, as every AVX2 CPU has
  bool avx_vnni = false;  // VEX-encoded VNNI on 256-bit registers (no AVX-512 needed)
  bool avx512 = false;    // F + BW + VL + DQ
  bool avx512_vnni = false;
  bool avx512_bf16 = false;
  // aarch64 (NEON itself is part of the base architecture)
  bool neon = false;
  bool dotprod = false;
  bool i8mm = false;
};

const CpuFeatures& cpu_features();

}  // namespace cellserve::engine::kernels
