// A typed, zero-copy view of a tensor's bytes.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/quant/ggml_type.h"

namespace cellserve::engine {

// ggml's shape convention: ne[0] is the innermost (contiguous) dimension, so a weight matrix
// W[n_out][n_in] has ne = {n_in, n_out}. Unused trailing dimensions are 1.
struct Shape {
  static constexpr int kMaxDims = 4;  // GGML_MAX_DIMS
  std::array<int64_t, kMaxDims> ne{1, 1, 1, 1};
  int n_dims = 0;

  int64_t elements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
  int64_t rows() const { return ne[1] * ne[2] * ne[3]; }
  bool operator==(const Shape& o) const { return n_dims == o.n_dims && ne == o.ne; }
  // "[4096, 1024]" in ggml order.
  std::string to_string() const;
};

inline Shape make_shape(std::initializer_list<int64_t> dims) {
  Shape s;
  for (int64_t d : dims) s.ne[static_cast<size_t>(s.n_dims++)] = d;
  return s;
}

struct TensorView {
  std::string_view name;
  GgmlType type = GgmlType::F32;
  Shape shape;
  std::span<const std::byte> data;  // rows of ggml_row_size(type, ne[0]) bytes, contiguous
  // The same rows re-laid out for the kernel table's packed_dot (groups of kernels::kPackedRows,
  // see kernel_table.h), or null; it owns its memory (a piece of a HugePageArena chunk). `data`
  // stays valid: other readers (embedding lookup, LoRA merge) use the original layout.
  std::shared_ptr<const std::byte> packed;

  // The bytes of row `r` (over all dims above ne[0]). REQUIRES: r < shape.rows().
  std::span<const std::byte> row(int64_t r) const {
    const size_t rs = ggml_row_size(type, shape.ne[0]);
    return data.subspan(static_cast<size_t>(r) * rs, rs);
  }
};

}  // namespace cellserve::engine
