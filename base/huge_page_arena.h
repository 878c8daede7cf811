// Memory for large, long-lived buffers that are streamed from end to end (packed weights, the
// read-bandwidth probe's buffer), in 2 MiB-aligned anonymous mappings that the kernel is asked to
// back with transparent huge pages.
//
// Why: decode reads every weight once per token. On 4 KiB pages that is a TLB miss every 4 KiB
// (a two-dimensional page walk under a hypervisor), and glibc's malloc hands out large blocks that
// are not 2 MiB-aligned, so even with THP set to "madvise" they never get huge pages. One arena
// packs many tensors (most are 0.5–2 MiB) into shared chunks, so rounding each to 2 MiB wastes
// nothing.
#pragma once

#include <cstddef>
#include <memory>

#include "base/status.h"

namespace cellserve {

// `bytes` zeroed bytes in their own 2 MiB-aligned mapping, advised for huge pages where the
// system has them. The mapping is released when the last copy of the pointer goes.
Result<std::shared_ptr<std::byte>> map_huge_pages(size_t bytes);

// Hands out 64-byte-aligned, zeroed pieces of chunks from map_huge_pages. A chunk lives as long as
// any piece of it does (the pieces own it); the arena itself may go first. Not thread-safe.
class HugePageArena {
 public:
  static constexpr size_t kDefaultChunkBytes = size_t{64} << 20;
  explicit HugePageArena(size_t chunk_bytes = kDefaultChunkBytes) : chunk_bytes_(chunk_bytes) {}
  // A copy would hand out the same bytes of the current chunk twice.
  HugePageArena(const HugePageArena&) = delete;
  HugePageArena& operator=(const HugePageArena&) = delete;

  // A piece larger than the chunk size gets a chunk of its own.
  Result<std::shared_ptr<std::byte>> allocate(size_t bytes);

 private:
  size_t chunk_bytes_;
  std::shared_ptr<std::byte> chunk_;  // the current chunk, chunk_bytes_ long
  size_t used_ = 0;
};

}  // namespace cellserve
