// The pieces the x86 tables are assembled from. Each add_* fills the entries of one family of
// kernels into a table that already holds everything below it (the reference for AVX2).
// These live in baseline-compiled files; the kernels they point at are in avx2/.
#pragma once

#include "engine/kernels/kernel_table.h"

namespace cellserve::engine::kernels::x86 {

// F32/F16/BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL, the activation converters, axpy_f16, swiglu.
void add_avx2_legacy(KernelTable& t);
// Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS.
void add_avx2_kquants(KernelTable& t);

// Gives type `w` packed rows (see kernel_table.h).
inline void set_packed(KernelTable& t, GgmlType w, PackFn pack, PackedDotFn dot, int block_bytes) {
  WeightKernels& k = t.weights[static_cast<size_t>(w)];
  k.pack = pack;
  k.packed_dot = dot;
  k.packed_block_bytes = block_bytes;
}

}  // namespace cellserve::engine::kernels::x86
