// A read-only memory map of a whole file.
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include "base/status.h"

namespace cellserve {

// Owns a read-only, private mapping of one file. Movable, not copyable. The bytes stay valid
// until the object is destroyed. Thread-safe for concurrent reads.
class MappedFile {
 public:
  // Maps `path`. Fails with NotFound / Internal and a message naming the path. An empty file
  // maps to an empty span.
  static Result<MappedFile> open(const std::string& path);

  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  std::span<const std::byte> bytes() const { return {static_cast<const std::byte*>(data_), size_}; }
  size_t size() const { return size_; }

  // Tells the kernel that the whole pages inside `range` (a part of this mapping) will not be
  // read for a while, so they leave the process's resident memory; a later read maps them in
  // again from the file. Used once a tensor has been copied into another layout.
  void release(std::span<const std::byte> range) const;

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace cellserve
