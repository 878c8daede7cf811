#include "engine/gguf/gguf_writer.h"

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

#include "engine/gguf/gguf_file.h"

namespace cellserve::engine {
namespace {

class ByteSink {
 public:
  explicit ByteSink(std::vector<std::byte>* out) : out_(out) {}

  template <typename T>
  void put(T v) {
    const auto* p = reinterpret_cast<const std::byte*>(&v);
    out_->insert(out_->end(), p, p + sizeof(T));
  }
  void put_string(const std::string& s) {
    put<uint64_t>(s.size());
    const auto* p = reinterpret_cast<const std::byte*>(s.data());
    out_->insert(out_->end(), p, p + s.size());
  }
  void pad_to(size_t alignment) {
    while (out_->size() % alignment != 0) out_->push_back(std::byte{0});
  }

  void put_value(const GgufValue& value) {
    std::visit(
        [this](const auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, std::string>) {
            put_string(v);
          } else if constexpr (std::is_same_v<T, GgufArray>) {
            put<uint32_t>(static_cast<uint32_t>(v.element_type));
            put<uint64_t>(v.items.size());
            for (const GgufValue& item : v.items) put_value(item);
          } else if constexpr (std::is_same_v<T, bool>) {
            put<uint8_t>(v ? 1 : 0);
          } else {
            put<T>(v);
          }
        },
        value.storage());
  }

 private:
  std::vector<std::byte>* out_;
};

uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

}  // namespace

void GgufWriter::set(const std::string& key, GgufValue value) {
  for (auto& kv : metadata_) {
    if (kv.key == key) {
      kv.value = std::move(value);
      return;
    }
  }
  metadata_.push_back({key, std::move(value)});
}

void GgufWriter::remove(const std::string& key) {
  std::erase_if(metadata_, [&](const GgufKeyValue& kv) { return kv.key == key; });
}

size_t GgufWriter::alignment() const {
  for (const auto& kv : metadata_) {
    if (kv.key != "general.alignment") continue;
    if (const auto* v = std::get_if<uint32_t>(&kv.value.storage()); v != nullptr && *v != 0 && (*v & (*v - 1)) == 0) {
      return *v;
    }
  }
  return kGgufDefaultAlignment;
}

Status GgufWriter::check_new_tensor(const std::string& name, GgmlType type, const Shape& shape) const {
  for (const auto& t : tensors_) {
    if (t.name == name) return Status::invalid_argument("duplicate tensor name '" + name + "'");
  }
  if (shape.n_dims < 1 || shape.n_dims > Shape::kMaxDims) {
    return Status::invalid_argument("tensor '" + name + "': " + std::to_string(shape.n_dims) + " dimensions");
  }
  for (int64_t ne : shape.ne) {
    if (ne < 0) return Status::invalid_argument("tensor '" + name + "': negative dimension");
  }
  if (shape.ne[0] % ggml_block_size(type) != 0) {
    return Status::invalid_argument("tensor '" + name + "': row length " + std::to_string(shape.ne[0]) +
                                    " is not a multiple of the " + std::string(ggml_type_name(type)) + " block size " +
                                    std::to_string(ggml_block_size(type)));
  }
  return {};
}

Status GgufWriter::add_tensor(const std::string& name, GgmlType type, const Shape& shape,
                              std::span<const std::byte> data) {
  CS_RETURN_IF_ERROR(check_new_tensor(name, type, shape));
  const size_t size = ggml_row_size(type, shape.ne[0]) * static_cast<size_t>(shape.rows());
  if (data.size() != size) {
    return Status::invalid_argument("tensor '" + name + "': " + std::to_string(data.size()) +
                                    " bytes given, type and shape need " + std::to_string(size));
  }
  tensors_.push_back({name, type, shape, size, std::vector<std::byte>(data.begin(), data.end()), nullptr});
  return {};
}

Status GgufWriter::add_tensor(const std::string& name, GgmlType type, const Shape& shape, TensorFiller fill) {
  CS_RETURN_IF_ERROR(check_new_tensor(name, type, shape));
  const size_t size = ggml_row_size(type, shape.ne[0]) * static_cast<size_t>(shape.rows());
  tensors_.push_back({name, type, shape, size, {}, std::move(fill)});
  return {};
}

std::vector<std::byte> GgufWriter::header_bytes(std::vector<uint64_t>* offsets) const {
  std::vector<std::byte> out;
  ByteSink sink(&out);
  sink.put<uint32_t>(kGgufMagic);
  sink.put<uint32_t>(3);
  sink.put<uint64_t>(tensors_.size());
  sink.put<uint64_t>(metadata_.size());
  for (const auto& kv : metadata_) {
    sink.put_string(kv.key);
    sink.put<uint32_t>(static_cast<uint32_t>(kv.value.type()));
    sink.put_value(kv.value);
  }
  const size_t align = alignment();
  uint64_t offset = 0;
  for (const auto& t : tensors_) {
    sink.put_string(t.name);
    sink.put<uint32_t>(static_cast<uint32_t>(t.shape.n_dims));
    for (int d = 0; d < t.shape.n_dims; ++d)
      sink.put<uint64_t>(static_cast<uint64_t>(t.shape.ne[static_cast<size_t>(d)]));
    sink.put<uint32_t>(static_cast<uint32_t>(t.type));
    sink.put<uint64_t>(offset);
    offsets->push_back(offset);
    offset = align_up(offset + t.size_bytes, align);
  }
  sink.pad_to(align);
  return out;
}

std::vector<std::byte> GgufWriter::to_bytes() const {
  std::vector<uint64_t> offsets;
  std::vector<std::byte> out = header_bytes(&offsets);
  const size_t data_start = out.size();
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const auto& t = tensors_[i];
    out.resize(data_start + offsets[i], std::byte{0});
    const size_t at = out.size();
    out.resize(at + t.size_bytes);
    if (t.fill) {
      t.fill(std::span<std::byte>(out.data() + at, t.size_bytes));
    } else {
      std::memcpy(out.data() + at, t.owned.data(), t.size_bytes);
    }
  }
  if (!tensors_.empty()) out.resize(align_up(out.size(), alignment()), std::byte{0});
  return out;
}

Status GgufWriter::write(const std::string& path) const {
  const std::string tmp = path + ".partial";
  std::unique_ptr<std::FILE, FileCloser> file(std::fopen(tmp.c_str(), "wb"));
  if (!file) return Status::internal("cannot create " + tmp + ": " + std::strerror(errno));
  auto put = [&](const void* p, size_t n) { return n == 0 || std::fwrite(p, 1, n, file.get()) == n; };

  std::vector<uint64_t> offsets;
  const std::vector<std::byte> header = header_bytes(&offsets);
  bool ok = put(header.data(), header.size());
  uint64_t written = 0;  // bytes of the data section so far
  std::vector<std::byte> buffer;
  static const std::byte kZeros[64] = {};
  for (size_t i = 0; ok && i < tensors_.size(); ++i) {
    const auto& t = tensors_[i];
    for (; ok && written < offsets[i]; ++written) ok = put(kZeros, 1);
    if (t.fill) {
      buffer.assign(t.size_bytes, std::byte{0});
      t.fill(buffer);
      ok = ok && put(buffer.data(), buffer.size());
    } else {
      ok = ok && put(t.owned.data(), t.owned.size());
    }
    written += t.size_bytes;
  }
  if (!tensors_.empty()) {
    for (; ok && written % alignment() != 0; ++written) ok = put(kZeros, 1);
  }
  ok = ok && std::fflush(file.get()) == 0;
  if (!ok) {
    const std::string reason = std::strerror(errno);
    file.reset();
    std::remove(tmp.c_str());
    return Status::internal("writing " + path + ": " + reason);
  }
  file.reset();
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::remove(tmp.c_str());
    return Status::internal("cannot rename " + tmp + " to " + path + ": " + ec.message());
  }
  return {};
}

}  // namespace cellserve::engine
