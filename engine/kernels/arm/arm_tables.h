// The pieces the aarch64 tables are assembled from. Each add_* fills one family of kernels into
// a table that already holds everything below it (reference < neon < neon-dotprod < neon-i8mm).
// These live in baseline-compiled files; the kernels they point at are in neon/, dotprod/, i8mm/.
#pragma once

#include "engine/kernels/kernel_table.h"

namespace cellserve::engine::kernels::arm {

// Legacy family: F32/F16/BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL, the activation converters,
// axpy_f16, swiglu (whatever of it each level improves on).
void add_neon_legacy(KernelTable& t);
void add_dotprod_legacy(KernelTable& t);
void add_i8mm_legacy(KernelTable& t);
// K-quant family: Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS.
void add_neon_kquants(KernelTable& t);
void add_dotprod_kquants(KernelTable& t);
void add_i8mm_kquants(KernelTable& t);

}  // namespace cellserve::engine::kernels::arm
