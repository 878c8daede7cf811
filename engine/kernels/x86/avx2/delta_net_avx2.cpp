// The float Gated DeltaNet (delta_net_float.h) on AVX2 + FMA primitives.
#include <immintrin.h>

#include "engine/kernels/delta_net_float.h"
#include "engine/kernels/x86/avx2/lanes.h"
#include "engine/kernels/x86/avx2/legacy_kernels.h"

namespace cellserve::engine::kernels::x86 {
namespace {

struct Avx2Ops {
  static float dot(const float* a, const float* b, int64_t n) {
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps(), acc2 = _mm256_setzero_ps(),
           acc3 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
      acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
      acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), acc1);
      acc2 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 16), _mm256_loadu_ps(b + i + 16), acc2);
      acc3 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 24), _mm256_loadu_ps(b + i + 24), acc3);
    }
    for (; i + 8 <= n; i += 8) acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
    const __m256 acc = _mm256_add_ps(_mm256_add_ps(acc0, acc1), _mm256_add_ps(acc2, acc3));
    float sum = horizontal_sum(acc);
    for (; i < n; ++i) sum += a[i] * b[i];
    return sum;
  }
  static void axpy(float* y, float c, const float* x, int64_t n) {
    const __m256 cv = _mm256_set1_ps(c);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
      _mm256_storeu_ps(y + i, _mm256_fmadd_ps(cv, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
    for (; i < n; ++i) y[i] += c * x[i];
  }
  static void scale(float* y, float c, int64_t n) {
    const __m256 cv = _mm256_set1_ps(c);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_mul_ps(cv, _mm256_loadu_ps(y + i)));
    for (; i < n; ++i) y[i] *= c;
  }
};

}  // namespace

void delta_net_recurrent(const reference::DeltaNetHeadArgs& a, float* state) {
  delta_net_recurrent_float<Avx2Ops>(a, state);
}

void delta_net_chunked(const reference::DeltaNetHeadArgs& a, float* state, int64_t chunk_size) {
  delta_net_chunked_float<Avx2Ops>(a, state, chunk_size);
}

}  // namespace cellserve::engine::kernels::x86
