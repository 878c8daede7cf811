// Scalar reference dot products for float weight types. Accumulation is in double, the
// exact-math end of what ggml's SIMD F32-lane accumulation approximates.
#include <cstddef>
#include <cstring>

#include "base/half.h"
#include "engine/kernels/reference/reference_kernels.h"

namespace cellserve::engine::kernels::reference {
namespace {

// Element i of a row that may start at any address (memcpy: no alignment assumed).
template <typename T>
T load(const void* row, int64_t i) {
  T v;
  std::memcpy(&v, static_cast<const std::byte*>(row) + i * static_cast<int64_t>(sizeof(T)), sizeof(T));
  return v;
}

}  // namespace

float vec_dot_f32(int64_t n, const void* w, const void* a) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i)
    sum += static_cast<double>(load<float>(w, i)) * static_cast<double>(load<float>(a, i));
  return static_cast<float>(sum);
}

float vec_dot_f16(int64_t n, const void* w, const void* a) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i)
    sum += static_cast<double>(fp16_to_fp32(load<uint16_t>(w, i)) * fp16_to_fp32(load<uint16_t>(a, i)));
  return static_cast<float>(sum);
}

float vec_dot_bf16(int64_t n, const void* w, const void* a) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i)
    sum += static_cast<double>(bf16_to_fp32(load<uint16_t>(w, i)) * bf16_to_fp32(load<uint16_t>(a, i)));
  return static_cast<float>(sum);
}

}  // namespace cellserve::engine::kernels::reference
