#include "fleet/crypto/secret_box.h"

#include <fcntl.h>
#include <sodium.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "fleet/crypto/identity.h"

namespace cellserve::fleet {
namespace {

constexpr std::string_view kFileHeader = "cellserve-secrets-key-v1 ";
constexpr std::string_view kPrefix = "enc1:";

}  // namespace

Result<SecretBox> SecretBox::open_or_create(const std::string& path) {
  if (!sodium_ready()) return Status::internal("libsodium could not be initialised");
  SecretBox box;
  box.key_.resize(crypto_secretbox_KEYBYTES);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    struct stat st {};
    const bool stat_ok = ::fstat(fd, &st) == 0;
    char buf[128];
    const ssize_t n = stat_ok ? ::read(fd, buf, sizeof buf) : -1;
    ::close(fd);
    if (!stat_ok || n < 0) return Status::internal(path + ": cannot read");
    if ((st.st_mode & 077) != 0) {
      return Status(StatusCode::PermissionDenied, path + ": the secrets key is readable by others (chmod 600 it)");
    }
    const std::string_view text(buf, static_cast<size_t>(n));
    if (!text.starts_with(kFileHeader) ||
        !from_hex(text.substr(kFileHeader.size(), 2 * crypto_secretbox_KEYBYTES),
                  reinterpret_cast<unsigned char*>(box.key_.data()), box.key_.size())) {
      return Status::data_loss(path + ": not a cellserve secrets key file");
    }
    return box;
  }
  if (errno != ENOENT) return Status::internal(path + ": cannot open: " + std::strerror(errno));
  crypto_secretbox_keygen(reinterpret_cast<unsigned char*>(box.key_.data()));
  const std::string text = std::string(kFileHeader) +
                           to_hex(reinterpret_cast<const unsigned char*>(box.key_.data()), box.key_.size()) + "\n";
  const std::string tmp = path + ".tmp";
  const int out = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (out < 0) return Status::internal(tmp + ": cannot create");
  const bool written = ::write(out, text.data(), text.size()) == static_cast<ssize_t>(text.size()) && ::fsync(out) == 0;
  ::close(out);
  if (!written || ::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    return Status::internal(path + ": cannot write");
  }
  return box;
}

bool SecretBox::is_sealed(std::string_view value) { return value.starts_with(kPrefix); }

std::string SecretBox::seal(std::string_view plain) const {
  std::string out(crypto_secretbox_NONCEBYTES + crypto_secretbox_MACBYTES + plain.size(), '\0');
  auto* bytes = reinterpret_cast<unsigned char*>(out.data());
  randombytes_buf(bytes, crypto_secretbox_NONCEBYTES);
  crypto_secretbox_easy(bytes + crypto_secretbox_NONCEBYTES, reinterpret_cast<const unsigned char*>(plain.data()),
                        plain.size(), bytes, reinterpret_cast<const unsigned char*>(key_.data()));
  return std::string(kPrefix) + to_hex(bytes, out.size());
}

Result<std::string> SecretBox::open(std::string_view sealed) const {
  const auto bad = [] { return Status::data_loss("a stored secret does not open with this hub's secrets key"); };
  if (!sealed.starts_with(kPrefix)) return bad();
  const std::string_view hex = sealed.substr(kPrefix.size());
  if (hex.size() % 2 != 0 || hex.size() / 2 < crypto_secretbox_NONCEBYTES + crypto_secretbox_MACBYTES) return bad();
  std::string raw(hex.size() / 2, '\0');
  auto* bytes = reinterpret_cast<unsigned char*>(raw.data());
  if (!from_hex(hex, bytes, raw.size())) return bad();
  std::string plain(raw.size() - crypto_secretbox_NONCEBYTES - crypto_secretbox_MACBYTES, '\0');
  if (crypto_secretbox_open_easy(reinterpret_cast<unsigned char*>(plain.data()), bytes + crypto_secretbox_NONCEBYTES,
                                 raw.size() - crypto_secretbox_NONCEBYTES, bytes,
                                 reinterpret_cast<const unsigned char*>(key_.data())) != 0) {
    return bad();
  }
  return plain;
}

}  // namespace cellserve::fleet
