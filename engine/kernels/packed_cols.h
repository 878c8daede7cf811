// The column-count dispatch every table's packed kernels share (x86 and aarch64).
#pragma once

#include "engine/kernels/kernel_table.h"

namespace cellserve::engine::kernels {

// Runs kernel.operator()<C>() for C = cols (1..4, kPackedMaxCols): the column count is a
// template parameter so each instance keeps its accumulators in registers.
template <typename Kernel>
void with_cols(int cols, Kernel&& kernel) {
  static_assert(kPackedMaxCols == 4);
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

}  // namespace cellserve::engine::kernels
