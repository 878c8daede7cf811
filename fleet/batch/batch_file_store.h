// Where the bytes of the Files API's files live (uploaded batch inputs, output and error files),
// apart from their records (batch_store.h): in a folder for one hub (DATA_DIR/batch/files/<id>),
// or in the PostgreSQL database as rows of 1 MiB chunks when several hubs share it
// (pg_batch_file_store.cpp). A file is never whole in memory: it is written and read a piece at
// a time. Thread-safe; readers and writers are each used by one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"

namespace cellserve::fleet {

// The largest piece a reader returns at once and a chunk row holds: a file of any size is read
// with at most this much of it in memory.
inline constexpr size_t kBatchFileChunkBytes = 1 << 20;

class BatchFileReader {
 public:
  virtual ~BatchFileReader() = default;
  // Reads up to `n` bytes at `offset` into `out`: at most kBatchFileChunkBytes, fewer at the end
  // of a chunk or of the file; 0 at or past the end.
  virtual Result<size_t> read_at(uint64_t offset, char* out, size_t n) = 0;
  // The whole range [offset, offset + n) (one batch line), or DataLoss when the file is shorter.
  Result<std::string> read_range(uint64_t offset, size_t n);
};

// A file being written: its bytes appear under its id only at commit(), all at once, replacing
// any earlier content of the id; a writer destroyed uncommitted leaves nothing.
class BatchFileWriter {
 public:
  virtual ~BatchFileWriter() = default;
  virtual Status write(std::string_view bytes) = 0;
  virtual Status commit() = 0;
};

class BatchFileStore {
 public:
  virtual ~BatchFileStore() = default;
  virtual Result<std::unique_ptr<BatchFileWriter>> create(const std::string& id) = 0;
  // NotFound when the id has no content.
  virtual Result<std::unique_ptr<BatchFileReader>> open(const std::string& id) = 0;
  // The file's content goes (nothing to remove is no error).
  virtual Status remove(const std::string& id) = 0;
  // The file at `path` (an upload, spooled) becomes the content of `id`; `path` is gone after.
  // The folder store renames it; the database store copies it in chunk by chunk.
  virtual Status adopt(const std::string& id, const std::string& path);
  // A folder for the spooled upload bodies and scratch files of this hub.
  virtual const std::string& scratch_dir() const = 0;
};

// The files under `dir` (created when missing), one per id; a write goes to a temporary file that
// is synced and renamed at commit.
Result<std::unique_ptr<BatchFileStore>> open_disk_batch_file_store(const std::string& dir);

}  // namespace cellserve::fleet
