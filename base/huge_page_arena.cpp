#include "base/huge_page_arena.h"

#include <sys/mman.h>

#include <cstdint>
#include <string>

namespace cellserve {
namespace {

constexpr size_t kHugePage = size_t{2} << 20;
constexpr size_t kPieceAlign = 64;

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

}  // namespace

Result<std::shared_ptr<std::byte>> map_huge_pages(size_t bytes) {
  if (bytes == 0 || bytes > (size_t{1} << 48)) {
    return Status::invalid_argument("cannot map " + std::to_string(bytes) + " bytes");
  }
  const size_t size = round_up(bytes, kHugePage);
  // Map one huge page more than needed, then unmap the ends so what is left starts on a 2 MiB
  // boundary: mmap itself only promises 4 KiB alignment.
  const size_t span = size + kHugePage;
  void* raw = ::mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) {
    return Status::resource_exhausted("cannot map " + std::to_string(bytes) + " bytes of memory");
  }
  const auto begin = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = round_up(begin, kHugePage);
  if (aligned > begin) ::munmap(raw, aligned - begin);
  if (const uintptr_t end = begin + span; end > aligned + size) {
    ::munmap(reinterpret_cast<void*>(aligned + size), end - (aligned + size));
  }
#ifdef MADV_HUGEPAGE
  // Advice only: where THP is off or absent the pages stay 4 KiB and everything still works.
  ::madvise(reinterpret_cast<void*>(aligned), size, MADV_HUGEPAGE);
#endif
  return std::shared_ptr<std::byte>(reinterpret_cast<std::byte*>(aligned), [size](std::byte* p) { ::munmap(p, size); });
}

Result<std::shared_ptr<std::byte>> HugePageArena::allocate(size_t bytes) {
  const size_t need = round_up(bytes == 0 ? 1 : bytes, kPieceAlign);
  if (need > chunk_bytes_) return map_huge_pages(need);
  if (chunk_ == nullptr || chunk_bytes_ - used_ < need) {
    CS_ASSIGN_OR_RETURN(chunk_, map_huge_pages(chunk_bytes_));
    used_ = 0;
  }
  std::shared_ptr<std::byte> piece(chunk_, chunk_.get() + used_);  // shares the chunk's ownership
  used_ += need;
  return piece;
}

}  // namespace cellserve
