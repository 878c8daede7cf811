// GgufFile: a validated, memory-mapped GGUF model file (versions 2 and 3).
//
// Format: https://github.com/ggml-org/ggml/blob/master/docs/gguf.md. Opening a file parses the
// header, every metadata value and every tensor info, and checks that everything the rest of
// cellserve relies on holds (see docs/gguf.md for the list). After a successful open, every
// TensorView points inside the file and has exactly the bytes its type and shape need, so no
// later code re-checks bounds.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/mapped_file.h"
#include "base/status.h"
#include "engine/gguf/gguf_value.h"
#include "engine/gguf/tensor_view.h"

namespace cellserve::engine {

inline constexpr uint32_t kGgufMagic = 0x46554747;  // "GGUF" read as a little-endian u32
inline constexpr size_t kGgufDefaultAlignment = 32;

// Where a tensor's bytes are: `offset` is relative to the start of the data section.
struct GgufTensorInfo {
  std::string name;
  GgmlType type = GgmlType::F32;
  Shape shape;
  uint64_t offset = 0;
  uint64_t size_bytes = 0;
};

class GgufFile {
 public:
  // Maps and validates `path`. Errors: NotFound for a missing file, DataLoss for a malformed
  // one (message names the offending field and its file offset), Unimplemented for an
  // unsupported version or big-endian file.
  static Result<GgufFile> open(const std::string& path);

  // Validates `bytes` as a GGUF image. The caller keeps `bytes` alive as long as the result
  // and its views are used (for fuzzing and in-memory files).
  static Result<GgufFile> parse(std::span<const std::byte> bytes);

  GgufFile(GgufFile&&) noexcept = default;
  GgufFile& operator=(GgufFile&&) noexcept = default;

  uint32_t version() const { return version_; }
  size_t alignment() const { return alignment_; }
  // File offset of the data section (start of tensor data).
  uint64_t data_offset() const { return data_offset_; }
  uint64_t file_size() const { return bytes_.size(); }

  // Metadata in file order.
  const std::vector<GgufKeyValue>& metadata() const { return metadata_; }
  // The value of `key`, or nullptr.
  const GgufValue* find(std::string_view key) const;

  // Convenience typed lookups: nullopt when the key is absent or of an incompatible type.
  std::optional<std::string> get_string(std::string_view key) const;
  std::optional<int64_t> get_int(std::string_view key) const;
  std::optional<double> get_float(std::string_view key) const;
  std::optional<bool> get_bool(std::string_view key) const;

  // Tensor infos in file order.
  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  // The tensor named `name`, or nullptr.
  const GgufTensorInfo* find_tensor(std::string_view name) const;
  // A view into the mapped bytes of `info` (which must belong to this file).
  TensorView view(const GgufTensorInfo& info) const;
  // Lets the pages of `bytes` (inside a mapped file) leave resident memory until read again.
  // Nothing happens for a file parsed from caller-owned bytes.
  void release(std::span<const std::byte> bytes) const { mapping_.release(bytes); }

 private:
  GgufFile() = default;
  friend class GgufParser;

  MappedFile mapping_;  // empty when parsed from caller-owned bytes
  std::span<const std::byte> bytes_;
  uint32_t version_ = 0;
  size_t alignment_ = kGgufDefaultAlignment;
  uint64_t data_offset_ = 0;
  std::vector<GgufKeyValue> metadata_;
  std::vector<GgufTensorInfo> tensors_;
  std::unordered_map<std::string_view, size_t> metadata_index_;  // keys point into metadata_
  std::unordered_map<std::string_view, size_t> tensor_index_;    // keys point into tensors_
};

}  // namespace cellserve::engine
