// GgufWriter: writes GGUF version 3 files (metadata + aligned tensor data).
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "engine/gguf/gguf_value.h"
#include "engine/gguf/tensor_view.h"

namespace cellserve::engine {

// Collects metadata and tensors, then writes them in one pass. Tensor bytes are either owned by
// the writer or produced on demand by a callback at write time, so multi-gigabyte models can be
// written without holding every tensor in memory. Not thread-safe.
class GgufWriter {
 public:
  // Fills `out` (exactly the tensor's byte size) with the tensor's data.
  using TensorFiller = std::function<void(std::span<std::byte> out)>;

  // Sets `key` to `value`, replacing an earlier value but keeping the key's first position.
  // Setting "general.alignment" (a u32 power of two) changes the data alignment.
  void set(const std::string& key, GgufValue value);
  // Removes `key` if present.
  void remove(const std::string& key);
  const std::vector<GgufKeyValue>& metadata() const { return metadata_; }
  size_t tensor_count() const { return tensors_.size(); }

  // Adds a tensor whose bytes are copied now. Fails with InvalidArgument for a duplicate name,
  // a shape the type cannot hold (row length not a multiple of the block size), or a byte
  // count that does not match type and shape.
  Status add_tensor(const std::string& name, GgmlType type, const Shape& shape, std::span<const std::byte> data);
  // Adds a tensor whose bytes `fill` produces at write time.
  Status add_tensor(const std::string& name, GgmlType type, const Shape& shape, TensorFiller fill);

  // Writes the file to `path` (through a temporary file renamed into place, so a failed write
  // never leaves a partial file under that name).
  Status write(const std::string& path) const;

  // Returns the whole file as bytes (for tests and fuzz seeds).
  std::vector<std::byte> to_bytes() const;

 private:
  struct PendingTensor {
    std::string name;
    GgmlType type;
    Shape shape;
    size_t size_bytes;
    std::vector<std::byte> owned;
    TensorFiller fill;
  };
  size_t alignment() const;
  std::vector<std::byte> header_bytes(std::vector<uint64_t>* offsets) const;
  Status check_new_tensor(const std::string& name, GgmlType type, const Shape& shape) const;

  std::vector<GgufKeyValue> metadata_;
  std::vector<PendingTensor> tensors_;
};

}  // namespace cellserve::engine
