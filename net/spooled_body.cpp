#include "net/spooled_body.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <system_error>
#include <vector>

namespace cellserve::net {

Result<std::unique_ptr<SpoolFile>> SpoolFile::create(const std::string& dir) {
  std::string where = dir;
  if (where.empty()) {
    std::error_code ec;
    where = std::filesystem::temp_directory_path(ec).string();
    if (ec || where.empty()) where = "/tmp";
  }
  if (where.back() != '/') where.push_back('/');
  std::string path = where + "cellserve-body-XXXXXX";
  std::vector<char> name(path.begin(), path.end());
  name.push_back('\0');
  const int fd = ::mkostemp(name.data(), O_CLOEXEC);  // mode 0600, whatever the umask
  if (fd < 0) {
    const int err = errno;
    return Status::internal("cannot create a file in " + where + ": " + std::system_category().message(err));
  }
  path.assign(name.data());
  return std::unique_ptr<SpoolFile>(new SpoolFile(fd, std::move(path)));
}

SpoolFile::~SpoolFile() {
  struct stat mine {};
  struct stat named {};
  // Unlink only our own file: a handler may have renamed it, and another request's file may
  // have taken the free name since.
  const bool ours = ::fstat(fd_, &mine) == 0 && ::lstat(path_.c_str(), &named) == 0 && mine.st_dev == named.st_dev &&
                    mine.st_ino == named.st_ino;
  if (ours) ::unlink(path_.c_str());
  ::close(fd_);
}

bool SpoolBody::reader::append(const char* data, size_t size, boost::beast::error_code& ec) {
  if (size > body_.limit - body_.bytes) {  // bytes <= limit always holds
    ec = boost::beast::http::error::body_limit;
    return false;
  }
  while (size > 0) {
    const ssize_t n = ::write(body_.fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      body_.write_errno = n < 0 ? errno : EIO;
      ec = boost::beast::error_code(body_.write_errno, boost::system::system_category());
      return false;
    }
    data += n;
    size -= static_cast<size_t>(n);
    body_.bytes += static_cast<uint64_t>(n);
  }
  return true;
}

}  // namespace cellserve::net
