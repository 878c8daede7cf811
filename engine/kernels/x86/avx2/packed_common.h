// Helpers shared by the AVX2 packed-group kernels (packed_legacy.cpp, packed_q4_k.cpp,
// packed_q6_k.cpp), beside the lane helpers of lanes.h. AVX2-compiled files only; everything
// has internal linkage.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "engine/kernels/x86/avx2/lanes.h"

namespace cellserve::engine::kernels::x86 {
namespace {

// Runs kernel.operator()<C>() for C = cols (1..4, kPackedMaxCols): the column count is a
// template parameter so each instance keeps its accumulators in registers.
template <typename Kernel>
void with_cols(int cols, Kernel&& kernel) {
  switch (cols) {
    case 1:
      return kernel.template operator()<1>();
    case 2:
      return kernel.template operator()<2>();
    case 3:
      return kernel.template operator()<3>();
    default:
      return kernel.template operator()<4>();
  }
}

}  // namespace
}  // namespace cellserve::engine::kernels::x86
