#include "fleet/crypto/private_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace cellserve::fleet {
namespace {

Status io_error(const std::string& path, const char* what) {
  return Status::internal(path + ": " + what + ": " + std::strerror(errno));
}

}  // namespace

Result<std::optional<std::string>> read_private_file(const std::string& path, const std::string& what,
                                                     size_t max_bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return std::optional<std::string>();
    return io_error(path, "open");
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const Status s = io_error(path, "stat");
    ::close(fd);
    return s;
  }
  if ((st.st_mode & 077) != 0) {
    ::close(fd);
    return Status(StatusCode::PermissionDenied, path + ": the " + what + " is readable by others (chmod 600 it)");
  }
  std::string text(max_bytes, '\0');
  const ssize_t n = ::read(fd, text.data(), text.size());
  const int read_errno = errno;
  ::close(fd);
  if (n < 0) {
    errno = read_errno;
    return io_error(path, "read");
  }
  text.resize(static_cast<size_t>(n));
  return std::optional<std::string>(std::move(text));
}

Status write_private_file(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  // O_EXCL | O_NOFOLLOW: never written through a link (or into a file) someone left at the
  // temporary name. A stale one from a crash is removed first (unlink removes a link, not what
  // it points to), once.
  constexpr int kFlags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
  int out = ::open(tmp.c_str(), kFlags, 0600);
  if (out < 0 && errno == EEXIST && ::unlink(tmp.c_str()) == 0) out = ::open(tmp.c_str(), kFlags, 0600);
  if (out < 0) return io_error(tmp, "create");
  const bool written = ::write(out, text.data(), text.size()) == static_cast<ssize_t>(text.size()) && ::fsync(out) == 0;
  ::close(out);
  if (!written) {
    const Status s = io_error(tmp, "write");
    ::unlink(tmp.c_str());
    return s;
  }
  // link(2) never replaces what is at `path` (a key another process made meanwhile, or a link
  // put there): that is refused. rename(2) only where the file system has no hard links.
  int placed = ::link(tmp.c_str(), path.c_str());
  if (placed != 0 && (errno == EPERM || errno == EOPNOTSUPP || errno == ENOSYS)) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0) {
      errno = EEXIST;
    } else {
      placed = ::rename(tmp.c_str(), path.c_str());
    }
  }
  const Status s = placed == 0 ? Status() : io_error(path, "create");
  ::unlink(tmp.c_str());
  return s;
}

}  // namespace cellserve::fleet
