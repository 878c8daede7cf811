// The folder BatchFileStore (one hub, SQLite): DATA_DIR/batch/files/<id>, written to <id>.<random>
// and renamed over the id once synced, so a reader never sees half a file.
#include <fcntl.h>
#include <unistd.h>

#include <filesystem>

#include "fleet/batch/batch_file_store.h"
#include "fleet/crypto/identity.h"

namespace cellserve::fleet {
namespace {

namespace fs = std::filesystem;

class DiskReader final : public BatchFileReader {
 public:
  explicit DiskReader(int fd) : fd_(fd) {}
  ~DiskReader() override { ::close(fd_); }
  DiskReader(const DiskReader&) = delete;
  DiskReader& operator=(const DiskReader&) = delete;

  Result<size_t> read_at(uint64_t offset, char* out, size_t n) override {
    const ssize_t got = ::pread(fd_, out, std::min(n, kBatchFileChunkBytes), static_cast<off_t>(offset));
    if (got < 0) return Status::internal("a batch file cannot be read");
    return static_cast<size_t>(got);
  }

 private:
  int fd_;
};

class DiskWriter final : public BatchFileWriter {
 public:
  DiskWriter(int fd, std::string tmp, std::string path) : fd_(fd), tmp_(std::move(tmp)), path_(std::move(path)) {}
  ~DiskWriter() override {
    if (fd_ >= 0) ::close(fd_);
    std::error_code ec;
    if (!committed_) fs::remove(tmp_, ec);
  }
  DiskWriter(const DiskWriter&) = delete;
  DiskWriter& operator=(const DiskWriter&) = delete;

  Status write(std::string_view bytes) override {
    while (!bytes.empty()) {
      const ssize_t n = ::write(fd_, bytes.data(), bytes.size());
      if (n <= 0) return Status::internal(tmp_ + ": write failed");
      bytes.remove_prefix(static_cast<size_t>(n));
    }
    return {};
  }

  Status commit() override {
    // The bytes are on disk before a record may name them.
    const bool synced = ::fsync(fd_) == 0;
    ::close(fd_);
    fd_ = -1;
    if (!synced) return Status::internal(tmp_ + ": fsync failed");
    std::error_code ec;
    fs::rename(tmp_, path_, ec);
    if (ec) return Status::internal(path_ + ": " + ec.message());
    committed_ = true;
    return {};
  }

 private:
  int fd_;
  std::string tmp_;
  std::string path_;
  bool committed_ = false;
};

class DiskBatchFileStore final : public BatchFileStore {
 public:
  explicit DiskBatchFileStore(std::string dir) : dir_(std::move(dir)) {}

  Result<std::unique_ptr<BatchFileWriter>> create(const std::string& id) override {
    const std::string tmp = path(id) + "." + random_hex(6) + ".tmp";
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) return Status::internal(tmp + ": cannot create");
    return std::unique_ptr<BatchFileWriter>(std::make_unique<DiskWriter>(fd, tmp, path(id)));
  }

  Result<std::unique_ptr<BatchFileReader>> open(const std::string& id) override {
    const int fd = ::open(path(id).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Status::not_found("the file's content is missing at the hub");
    return std::unique_ptr<BatchFileReader>(std::make_unique<DiskReader>(fd));
  }

  Status remove(const std::string& id) override {
    std::error_code ec;
    fs::remove(path(id), ec);
    if (ec) return Status::internal(path(id) + ": " + ec.message());
    return {};
  }

  Status adopt(const std::string& id, const std::string& from) override {
    if (const int fd = ::open(from.c_str(), O_RDONLY | O_CLOEXEC); fd >= 0) {
      ::fsync(fd);
      ::close(fd);
    }
    std::error_code ec;
    fs::rename(from, path(id), ec);
    if (ec) return Status::internal(path(id) + ": " + ec.message());
    return {};
  }

  const std::string& scratch_dir() const override { return dir_; }

 private:
  std::string path(const std::string& id) const { return dir_ + "/" + id; }

  std::string dir_;
};

}  // namespace

Result<std::unique_ptr<BatchFileStore>> open_disk_batch_file_store(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Status::internal(dir + ": cannot create: " + ec.message());
  return std::unique_ptr<BatchFileStore>(std::make_unique<DiskBatchFileStore>(dir));
}

}  // namespace cellserve::fleet
