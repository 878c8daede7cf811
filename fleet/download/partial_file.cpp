#include "fleet/download/partial_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace cellserve::fleet {

Result<std::unique_ptr<PartialFile>> PartialFile::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return Status::internal(path + ": cannot open: " + std::strerror(errno));
  std::unique_ptr<PartialFile> f(new PartialFile(path, fd));
  // Two downloads appending to one partial would interleave their bytes.
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) return Status::unavailable(path + " is being downloaded by another process");
    return Status::internal(path + ": cannot lock: " + std::strerror(errno));
  }
  std::vector<char> buf(1 << 20);
  for (;;) {
    const ssize_t n = ::pread(fd, buf.data(), buf.size(), static_cast<off_t>(f->size_));
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::internal(path + ": read failed: " + std::strerror(errno));
    }
    f->hash_.update(buf.data(), static_cast<size_t>(n));
    f->size_ += static_cast<uint64_t>(n);
  }
  return f;
}

PartialFile::~PartialFile() { ::close(fd_); }

Status PartialFile::append(const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd_, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      if (err == ENOSPC || err == EDQUOT) return Status::resource_exhausted(path_ + ": disk full");
      return Status::internal(path_ + ": write failed: " + std::strerror(err));
    }
    hash_.update(data, static_cast<size_t>(n));
    size_ += static_cast<uint64_t>(n);
    data += n;
    size -= static_cast<size_t>(n);
  }
  return {};
}

Status PartialFile::truncate() {
  if (::ftruncate(fd_, 0) != 0) return Status::internal(path_ + ": truncate failed: " + std::strerror(errno));
  hash_ = Sha256();
  size_ = 0;
  return {};
}

Status PartialFile::sync() {
  if (::fsync(fd_) != 0) return Status::internal(path_ + ": fsync failed: " + std::strerror(errno));
  return {};
}

std::optional<uint64_t> PartialFile::free_space() const {
  struct statvfs st {};
  if (::fstatvfs(fd_, &st) != 0) return std::nullopt;
  return static_cast<uint64_t>(st.f_bavail) * st.f_frsize;
}

}  // namespace cellserve::fleet
