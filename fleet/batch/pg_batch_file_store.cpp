// Chunked rows: a writer inserts a chunk each time kBatchFileChunkBytes are buffered, under a
// temporary file_id of its own, and commit() renames its rows to the id in one transaction (the
// old content goes in the same one), so readers see the old file or the new one, never a mix. A
// reader lists the chunks' sizes once, then reads each piece it is asked for with substring(), at
// most one chunk per round trip. BYTEA travels as hex text (libpq's text parameters): twice the
// bytes on the wire, no binary formats in the shared connection layer.
#include "fleet/batch/pg_batch_file_store.h"

#include <algorithm>
#include <filesystem>
#include <mutex>
#include <vector>

#include "fleet/crypto/identity.h"
#include "fleet/store/pg_connection.h"

namespace cellserve::fleet {
namespace {

// One connection behind one mutex, shared by the store and the readers and writers it made.
struct PgFiles {
  std::mutex mu;
  std::unique_ptr<PgConnection> conn;  // guarded by mu
};

std::string to_hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (const char c : bytes) {
    const auto b = static_cast<unsigned char>(c);
    out += kDigits[b >> 4];
    out += kDigits[b & 15];
  }
  return out;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// PostgreSQL's text form of a BYTEA ("\x" and two hex digits a byte) into `out`; the bytes' count.
Result<size_t> from_hex(std::string_view text, char* out, size_t room) {
  if (!text.starts_with("\\x") || text.size() % 2 != 0 || (text.size() - 2) / 2 > room) {
    return Status::data_loss("a stored file chunk is not in BYTEA's hex form");
  }
  const size_t n = (text.size() - 2) / 2;
  for (size_t i = 0; i < n; ++i) {
    const int hi = hex_value(text[2 + 2 * i]);
    const int lo = hex_value(text[3 + 2 * i]);
    if (hi < 0 || lo < 0) return Status::data_loss("a stored file chunk is not in BYTEA's hex form");
    out[i] = static_cast<char>(hi * 16 + lo);
  }
  return n;
}

class PgReader final : public BatchFileReader {
 public:
  PgReader(std::shared_ptr<PgFiles> files, std::string id, std::vector<uint64_t> starts, uint64_t size)
      : files_(std::move(files)), id_(std::move(id)), starts_(std::move(starts)), size_(size) {}

  Result<size_t> read_at(uint64_t offset, char* out, size_t n) override {
    if (offset >= size_ || n == 0) return size_t{0};
    // The chunk that holds `offset`: the last one starting at or before it.
    const size_t seq =
        static_cast<size_t>(std::upper_bound(starts_.begin(), starts_.end(), offset) - starts_.begin()) - 1;
    const uint64_t chunk_end = seq + 1 < starts_.size() ? starts_[seq + 1] : size_;
    const size_t want = static_cast<size_t>(std::min<uint64_t>({n, kBatchFileChunkBytes, chunk_end - offset}));
    std::lock_guard lock(files_->mu);
    CS_ASSIGN_OR_RETURN(const PgResult r, files_->conn->exec("SELECT substring(data FROM $3 FOR $4) FROM "
                                                             "batch_file_chunks WHERE file_id = $1 AND seq = $2",
                                                             PgParams()
                                                                 .add(id_)
                                                                 .add(static_cast<int64_t>(seq))
                                                                 .add(static_cast<int64_t>(offset - starts_[seq] + 1))
                                                                 .add(static_cast<int64_t>(want))));
    if (r.rows() == 0) return Status::data_loss("a chunk of file " + id_ + " is gone (the file was removed)");
    return from_hex(r.row(0).text(0), out, want);
  }

 private:
  std::shared_ptr<PgFiles> files_;
  std::string id_;
  std::vector<uint64_t> starts_;  // each chunk's first byte in the file, by seq
  uint64_t size_;
};

class PgWriter final : public BatchFileWriter {
 public:
  PgWriter(std::shared_ptr<PgFiles> files, std::string id)
      : files_(std::move(files)), id_(std::move(id)), scratch_id_(id_ + "~" + random_hex(6)) {}
  ~PgWriter() override {
    if (committed_ || seq_ == 0) return;
    // Best effort: rows left by a hub that died here are removed with the file's id (remove()).
    std::lock_guard lock(files_->mu);
    (void)files_->conn->exec("DELETE FROM batch_file_chunks WHERE file_id = $1", PgParams().add(scratch_id_));
  }
  PgWriter(const PgWriter&) = delete;
  PgWriter& operator=(const PgWriter&) = delete;

  Status write(std::string_view bytes) override {
    while (!bytes.empty()) {
      const size_t take = std::min(bytes.size(), kBatchFileChunkBytes - buffer_.size());
      buffer_.append(bytes.substr(0, take));
      bytes.remove_prefix(take);
      if (buffer_.size() == kBatchFileChunkBytes) CS_RETURN_IF_ERROR(flush());
    }
    return {};
  }

  Status commit() override {
    // An empty file is one empty chunk: it exists.
    if (!buffer_.empty() || seq_ == 0) CS_RETURN_IF_ERROR(flush());
    std::lock_guard lock(files_->mu);
    PgTransaction tx(*files_->conn);
    CS_RETURN_IF_ERROR(tx.begin());
    CS_RETURN_IF_ERROR(
        files_->conn->exec("DELETE FROM batch_file_chunks WHERE file_id = $1", PgParams().add(id_)).status());
    CS_RETURN_IF_ERROR(
        files_->conn
            ->exec("UPDATE batch_file_chunks SET file_id = $1 WHERE file_id = $2", PgParams().add(id_).add(scratch_id_))
            .status());
    CS_RETURN_IF_ERROR(tx.commit());
    committed_ = true;
    return {};
  }

 private:
  Status flush() {
    std::lock_guard lock(files_->mu);
    CS_RETURN_IF_ERROR(files_->conn
                           ->exec("INSERT INTO batch_file_chunks (file_id, seq, data) VALUES ($1, $2, "
                                  "decode($3, 'hex'))",
                                  PgParams().add(scratch_id_).add(seq_).add(to_hex(buffer_)))
                           .status());
    ++seq_;
    buffer_.clear();
    return {};
  }

  std::shared_ptr<PgFiles> files_;
  std::string id_;
  std::string scratch_id_;  // the rows' file_id until commit
  std::string buffer_;      // at most kBatchFileChunkBytes
  int seq_ = 0;
  bool committed_ = false;
};

class PgBatchFileStore final : public BatchFileStore {
 public:
  PgBatchFileStore(std::shared_ptr<PgFiles> files, std::string scratch_dir)
      : files_(std::move(files)), scratch_dir_(std::move(scratch_dir)) {}

  Result<std::unique_ptr<BatchFileWriter>> create(const std::string& id) override {
    return std::unique_ptr<BatchFileWriter>(std::make_unique<PgWriter>(files_, id));
  }

  Result<std::unique_ptr<BatchFileReader>> open(const std::string& id) override {
    std::lock_guard lock(files_->mu);
    CS_ASSIGN_OR_RETURN(const PgResult r,
                        files_->conn->exec("SELECT octet_length(data) FROM batch_file_chunks WHERE file_id = $1 "
                                           "ORDER BY seq",
                                           PgParams().add(id)));
    if (r.rows() == 0) return Status::not_found("the file's content is missing at the hub");
    std::vector<uint64_t> starts;
    uint64_t size = 0;
    for (int i = 0; i < r.rows(); ++i) {
      starts.push_back(size);
      size += r.row(i).u64(0);
    }
    return std::unique_ptr<BatchFileReader>(std::make_unique<PgReader>(files_, id, std::move(starts), size));
  }

  Status remove(const std::string& id) override {
    std::lock_guard lock(files_->mu);
    // The id's rows, and the scratch rows of its writers that never committed (a hub died).
    return files_->conn
        ->exec("DELETE FROM batch_file_chunks WHERE file_id = $1 OR left(file_id, $3) = $2",
               PgParams().add(id).add(id + "~").add(static_cast<int64_t>(id.size() + 1)))
        .status();
  }

  const std::string& scratch_dir() const override { return scratch_dir_; }

 private:
  std::shared_ptr<PgFiles> files_;
  std::string scratch_dir_;
};

}  // namespace

Result<std::unique_ptr<BatchFileStore>> open_postgres_batch_file_store(const std::string& url,
                                                                       const std::string& scratch_dir) {
  std::error_code ec;
  std::filesystem::create_directories(scratch_dir, ec);
  if (ec) return Status::internal(scratch_dir + ": cannot create: " + ec.message());
  auto files = std::make_shared<PgFiles>();
  CS_ASSIGN_OR_RETURN(files->conn, PgConnection::open(url));
  return std::unique_ptr<BatchFileStore>(std::make_unique<PgBatchFileStore>(std::move(files), scratch_dir));
}

}  // namespace cellserve::fleet
