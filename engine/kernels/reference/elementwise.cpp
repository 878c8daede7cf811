// Scalar references for the element-wise kernels of the table (attention's V accumulation, SwiGLU,
// RMS norm).
#include <algorithm>
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

// Four rows are summed side by side, so that four chains of dependent adds overlap instead of
// running one after another (the same sums, bit for bit): the ARM tables use this one.
void rms_norm(const float* x, const float* w, float* y, int64_t rows, int64_t n, float eps) {
  constexpr int64_t kSideBySide = 4;
  for (int64_t r = 0; r < rows; r += kSideBySide) {
    const int64_t m = std::min(kSideBySide, rows - r);
    double sum[kSideBySide] = {0.0, 0.0, 0.0, 0.0};
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t k = 0; k < m; ++k) {
        const float v = x[(r + k) * n + i];
        sum[k] += static_cast<double>(v * v);
      }
    }
    // Every sum is taken before a row is written: y may be x.
    for (int64_t k = 0; k < m; ++k) {
      const float* xr = x + (r + k) * n;
      float* yr = y + (r + k) * n;
      const float mean = static_cast<float>(sum[k] / static_cast<double>(n));
      const float scale = 1.0f / std::sqrt(mean + eps);
      for (int64_t i = 0; i < n; ++i) yr[i] = xr[i] * scale;
      if (w != nullptr) {
        for (int64_t i = 0; i < n; ++i) yr[i] *= w[i];
      }
    }
  }
}

}  // namespace cellserve::engine::kernels::reference
