#include "engine/models/model_loader.h"

#include <algorithm>

#include "engine/kernels/kernel_table.h"
#include "engine/quant/quantize.h"

namespace cellserve::engine {

int64_t HparamReader::require_int(const std::string& key, int64_t min, int64_t max) {
  const std::string full = arch_ + "." + key;
  const GgufValue* v = file_.find(full);
  if (v == nullptr) {
    fail(Status::invalid_argument("missing hyperparameter " + full));
    return min;
  }
  if (v->as_array() != nullptr) {
    fail(Status::unimplemented(full + " is a per-layer array; only a single value is supported"));
    return min;
  }
  const auto i = v->as_int();
  if (!i || *i < min || *i > max) {
    fail(Status::invalid_argument(full + " = " + v->to_display_string() + " is out of range [" + std::to_string(min) +
                                  ", " + std::to_string(max) + "]"));
    return min;
  }
  return *i;
}

int64_t HparamReader::int_or(const std::string& key, int64_t fallback, int64_t min, int64_t max) {
  if (file_.find(arch_ + "." + key) == nullptr) return fallback;
  return require_int(key, min, max);
}

float HparamReader::float_or(const std::string& key, float fallback) {
  const std::string full = arch_ + "." + key;
  const GgufValue* v = file_.find(full);
  if (v == nullptr) return fallback;
  const auto f = v->as_float();
  if (!f) {
    fail(Status::invalid_argument(full + " must be a number, found " + gguf_value_type_name(v->type())));
    return fallback;
  }
  return static_cast<float>(*f);
}

std::string HparamReader::string_or(const std::string& key, const std::string& fallback) {
  return file_.get_string(arch_ + "." + key).value_or(fallback);
}

std::optional<int64_t> HparamReader::global_int(const std::string& full_key) { return file_.get_int(full_key); }

const GgufTensorInfo* TensorBinder::find(const std::string& name, std::initializer_list<int64_t> shape, bool required) {
  const GgufTensorInfo* info = file_.find_tensor(name);
  if (info == nullptr) {
    if (required) fail(Status::invalid_argument("tensor " + name + " is missing"));
    return nullptr;
  }
  Shape expected;
  for (int64_t d : shape) expected.ne[static_cast<size_t>(expected.n_dims++)] = d;
  // Trailing dimensions of 1 may be stored or omitted.
  bool same = true;
  for (int d = 0; d < Shape::kMaxDims; ++d)
    same = same && info->shape.ne[static_cast<size_t>(d)] == expected.ne[static_cast<size_t>(d)];
  if (!same) {
    fail(Status::invalid_argument(name + ": expected shape " + expected.to_string() + ", got " +
                                  info->shape.to_string()));
    return nullptr;
  }
  return info;
}

TensorView TensorBinder::weight(const std::string& name, std::initializer_list<int64_t> shape, bool required) {
  TensorView v = lookup_table(name, shape, required);
  if (!v.data.empty()) resident_.push_back(v.data);
  return v;
}

TensorView TensorBinder::lookup_table(const std::string& name, std::initializer_list<int64_t> shape, bool required) {
  const GgufTensorInfo* info = find(name, shape, required);
  if (info == nullptr) return {};
  if (!kernels::active_kernels().for_weight(info->type).supported) {
    fail(
        Status::unimplemented(name + ": tensor type " + std::string(ggml_type_name(info->type)) + " is not supported"));
    return {};
  }
  return file_.view(*info);
}

size_t packed_size(const TensorView& v) {
  const kernels::WeightKernels& k = kernels::active_kernels().for_weight(v.type);
  const int64_t n = v.shape.ne[0];
  const int64_t rows = v.shape.rows();
  const int64_t block = ggml_block_size(v.type);
  if (k.pack == nullptr || k.packed_dot == nullptr || k.packed_block_bytes <= 0 || v.data.empty() || n % block != 0 ||
      n % k.packed_n_multiple != 0 || rows % kernels::kPackedRows != 0) {
    return 0;
  }
  return static_cast<size_t>(n / block * k.packed_block_bytes) * static_cast<size_t>(rows / kernels::kPackedRows);
}

Result<std::shared_ptr<const std::byte>> pack_rows(const TensorView& v, HugePageArena& arena) {
  const kernels::WeightKernels& k = kernels::active_kernels().for_weight(v.type);
  const int64_t n = v.shape.ne[0];
  const size_t row_bytes = ggml_row_size(v.type, n);
  const auto group_bytes = static_cast<size_t>(n / ggml_block_size(v.type) * k.packed_block_bytes);
  const int64_t groups = v.shape.rows() / kernels::kPackedRows;
  CS_ASSIGN_OR_RETURN(std::shared_ptr<std::byte> packed, arena.allocate(packed_size(v)));
  for (int64_t g = 0; g < groups; ++g) {
    k.pack(n, v.data.data() + static_cast<size_t>(g * kernels::kPackedRows) * row_bytes, row_bytes,
           packed.get() + static_cast<size_t>(g) * group_bytes);
  }
  return std::shared_ptr<const std::byte>(std::move(packed));
}

TensorView TensorBinder::pack(TensorView v) {
  const size_t bytes = packed_size(v);
  if (bytes == 0) {
    // Read in place by the matmul: resident, once.
    const bool listed = std::any_of(resident_.begin(), resident_.end(),
                                    [&](std::span<const std::byte> r) { return r.data() == v.data.data(); });
    if (!v.data.empty() && !listed) resident_.push_back(v.data);
    return v;
  }
  Result<std::shared_ptr<const std::byte>> packed = pack_rows(v, arena_);
  if (!packed.ok()) {
    fail(Status::resource_exhausted(std::string(v.name) + ": " + packed.status().message()));
    return {};
  }
  file_.release(v.data);
  std::erase_if(resident_, [&](std::span<const std::byte> r) { return r.data() == v.data.data(); });
  resident_.emplace_back(packed->get(), bytes);
  v.packed = std::move(*packed);
  return v;
}

std::vector<float> TensorBinder::vector(const std::string& name, int64_t size, bool required) {
  const GgufTensorInfo* info = find(name, {size}, required);
  if (info == nullptr) return {};
  if (!can_dequantize(info->type)) {
    fail(
        Status::unimplemented(name + ": tensor type " + std::string(ggml_type_name(info->type)) + " is not supported"));
    return {};
  }
  std::vector<float> out(static_cast<size_t>(size));
  dequantize_row(info->type, file_.view(*info).data.data(), out.data(), size);
  return out;
}

}  // namespace cellserve::engine
