#include "engine/gguf/gguf_file.h"

namespace cellserve::engine {

std::string Shape::to_string() const {
  std::string out = "[";
  for (int d = 0; d < n_dims; ++d) {
    if (d) out += ", ";
    out += std::to_string(ne[static_cast<size_t>(d)]);
  }
  return out + "]";
}

const GgufValue* GgufFile::find(std::string_view key) const {
  auto it = metadata_index_.find(key);
  return it == metadata_index_.end() ? nullptr : &metadata_[it->second].value;
}

std::optional<std::string> GgufFile::get_string(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr || v->as_string() == nullptr) return std::nullopt;
  return *v->as_string();
}

std::optional<int64_t> GgufFile::get_int(std::string_view key) const {
  const GgufValue* v = find(key);
  return v == nullptr ? std::nullopt : v->as_int();
}

std::optional<double> GgufFile::get_float(std::string_view key) const {
  const GgufValue* v = find(key);
  return v == nullptr ? std::nullopt : v->as_float();
}

std::optional<bool> GgufFile::get_bool(std::string_view key) const {
  const GgufValue* v = find(key);
  return v == nullptr ? std::nullopt : v->as_bool();
}

const GgufTensorInfo* GgufFile::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

TensorView GgufFile::view(const GgufTensorInfo& info) const {
  return TensorView{
      info.name, info.type, info.shape,
      bytes_.subspan(static_cast<size_t>(data_offset_ + info.offset), static_cast<size_t>(info.size_bytes)), nullptr};
}

}  // namespace cellserve::engine
