#include "base/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <utility>

namespace cellserve {

Result<MappedFile> MappedFile::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    const std::string reason = std::strerror(err);
    if (err == ENOENT) return Status::not_found(path + ": " + reason);
    return Status::internal(path + ": " + reason);
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const std::string reason = std::strerror(errno);
    ::close(fd);
    return Status::internal(path + ": " + reason);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status::invalid_argument(path + ": not a regular file");
  }
  MappedFile file;
  file.size_ = static_cast<size_t>(st.st_size);
  if (file.size_ > 0) {
    void* p = ::mmap(nullptr, file.size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      const std::string reason = std::strerror(errno);
      ::close(fd);
      return Status::internal(path + ": mmap failed: " + reason);
    }
    file.data_ = p;
  }
  ::close(fd);  // the mapping keeps the file alive
  return file;
}

void MappedFile::release(std::span<const std::byte> range) const {
  const auto base = reinterpret_cast<uintptr_t>(data_);
  auto begin = reinterpret_cast<uintptr_t>(range.data());
  auto end = begin + range.size();
  if (data_ == nullptr || begin < base || end > base + size_) return;  // not ours: nothing to do
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  begin = (begin + page - 1) / page * page;
  end = end / page * page;
  // MADV_DONTNEED on a clean private file mapping only drops pages; reads fault them back in.
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) ::munmap(data_, size_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(data_, size_);
}

}  // namespace cellserve
