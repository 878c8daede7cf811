#include "cli/key_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace cellserve::cli {
namespace {

// The longest key file read (a key is one short line; the rest of a longer file is ignored).
constexpr size_t kMaxKeyFileBytes = 4096;

// Zeroes `s` through a volatile pointer, so the store is not elided: the file's bytes beyond the
// key (and the buffer itself) do not linger in freed memory.
void zero(std::string& s) {
  volatile char* p = s.data();
  for (size_t i = 0; i < s.size(); ++i) p[i] = 0;
}

}  // namespace

Result<std::string> read_key_file(const std::string& flag, const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::invalid_argument(flag + " " + path + ": cannot read the file");
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    return Status::invalid_argument(flag + " " + path + ": cannot read the file");
  }
  // Checked on the opened file, so it cannot change between the check and the read.
  if ((st.st_mode & 077) != 0) {
    ::close(fd);
    return Status::invalid_argument(flag + " " + path +
                                    ": the key file is readable or writable by others (chmod 600 it)");
  }
  std::string text(kMaxKeyFileBytes, '\0');
  size_t have = 0;
  while (have < text.size()) {
    const ssize_t n = ::read(fd, text.data() + have, text.size() - have);
    if (n < 0) {
      ::close(fd);
      zero(text);
      return Status::invalid_argument(flag + " " + path + ": cannot read the file");
    }
    if (n == 0) break;
    have += static_cast<size_t>(n);
  }
  ::close(fd);
  const std::string_view all(text.data(), have);
  std::string_view key = all.substr(0, all.find('\n'));
  const auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f'; };
  while (!key.empty() && blank(key.back())) key.remove_suffix(1);
  while (!key.empty() && blank(key.front())) key.remove_prefix(1);
  std::string out(key);
  zero(text);
  if (out.empty()) return Status::invalid_argument(flag + " " + path + ": the first line is empty");
  return out;
}

}  // namespace cellserve::cli
