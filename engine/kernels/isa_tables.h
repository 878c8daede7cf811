// The SIMD kernel tables, one per instruction set. Each starts from the reference table and
// replaces what it implements, so a type without a SIMD kernel still runs (on the scalar one).
// Call one only when cpu_features() says the host can run it (dispatch.cpp does).
#pragma once

#include "engine/kernels/kernel_table.h"

namespace cellserve::engine::kernels {

#if defined(CELLSERVE_KERNELS_X86)
const KernelTable& avx2_kernels();  // AVX2 + FMA + F16C + BMI2
// The AVX2 table with the packed prefill kernels' int8 dot products on AVX-VNNI (VEX vpdpbusd);
// for CPUs with AVX-VNNI but no AVX-512 (Intel Alder Lake and later).
const KernelTable& avx_vnni_kernels();
// The AVX2 table with attention in 512-bit registers; needs AVX512-F/BW/VL/DQ.
const KernelTable& avx512_kernels();
// The avx512 table with the packed prefill kernels' int8 dot products on VNNI (vpdpbusd, 256-bit
// registers); needs AVX512-F/BW/VL/DQ + VNNI.
const KernelTable& avx512_vnni_kernels();
// The avx512-vnni table with BF16 weights dotted by vdpbf16ps; needs AVX512-BF16 as well.
const KernelTable& avx512_bf16_kernels();
#endif

#if defined(CELLSERVE_KERNELS_ARM)
const KernelTable& neon_kernels();          // ARMv8 NEON
const KernelTable& neon_dotprod_kernels();  // + SDOT/UDOT (ARMv8.2 dotprod)
const KernelTable& neon_i8mm_kernels();     // + SMMLA (ARMv8.6 i8mm)
#endif

}  // namespace cellserve::engine::kernels
