// Scalar references for the element-wise kernels of the table (attention's V accumulation, SwiGLU).
#include <cmath>

#include "base/half.h"
#include "engine/kernels/reference/reference_kernels.h"

namespace cellserve::engine::kernels::reference {

void axpy_f16(int64_t n, float alpha, const uint16_t* x, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] += alpha * fp16_to_fp32(x[i]);
}

void swiglu(int64_t n, const float* gate, const float* up, float* h) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    h[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

}  // namespace cellserve::engine::kernels::reference
