// The files' bytes (batch_file_store.h), in a folder beside batch.db and as chunk rows in the
// PostgreSQL database: a file of several chunks round-trips a piece of at most one chunk at a
// time; a write is seen whole at commit or not at all; removing a file removes its chunks; a
// spooled upload is adopted. Every test runs on both engines.
#include <fstream>

#include "fleet/batch/open_batch_store.h"
#include "tests/fleet/batch/batch_store_fixture.h"
#ifdef CELLSERVE_HAVE_POSTGRES
#include "fleet/store/pg_connection.h"
#endif

namespace cellserve::fleet {
namespace {

class BatchFileStoreTest : public BatchStoreTest {
 protected:
  void SetUp() override {
    BatchStoreTest::SetUp();  // the store migrates the schema the chunks' table is in
    if (IsSkipped() || HasFatalFailure()) return;
    auto files = open_batch_file_store(location_, (dir_ / "files").string());
    ASSERT_TRUE(files.ok()) << files.status().to_string();
    files_ = std::move(files).value();
  }
  void TearDown() override {
    files_.reset();
    BatchStoreTest::TearDown();
  }
  Status put(const std::string& id, std::string_view bytes, size_t piece) {
    CS_ASSIGN_OR_RETURN(std::unique_ptr<BatchFileWriter> w, files_->create(id));
    for (size_t at = 0; at < bytes.size(); at += piece) CS_RETURN_IF_ERROR(w->write(bytes.substr(at, piece)));
    return w->commit();
  }
  // The whole file, read front to back asking for far more than a chunk each time; every piece
  // returned is at most one chunk.
  std::string read_all(const std::string& id) {
    auto r = files_->open(id);
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    if (!r.ok()) return "";
    std::string out;
    std::string buf(4 * kBatchFileChunkBytes, '\0');
    while (true) {
      auto got = (*r)->read_at(out.size(), buf.data(), buf.size());
      EXPECT_TRUE(got.ok()) << got.status().to_string();
      if (!got.ok() || *got == 0) return out;
      EXPECT_LE(*got, kBatchFileChunkBytes) << "a read returned more than one chunk";
      out.append(buf.data(), *got);
    }
  }
  // How many chunk rows the database holds (0 for the folder store).
  int chunk_rows() {
#ifdef CELLSERVE_HAVE_POSTGRES
    if (GetParam() == BatchEngine::Postgres) {
      auto conn = PgConnection::open(location_);
      EXPECT_TRUE(conn.ok());
      auto r = (*conn)->exec("SELECT count(*) FROM batch_file_chunks");
      EXPECT_TRUE(r.ok()) << r.status().to_string();
      return r.ok() ? r->row(0).i32(0) : -1;
    }
#endif
    return 0;
  }

  std::unique_ptr<BatchFileStore> files_;
};

INSTANTIATE_TEST_SUITE_P(Engines, BatchFileStoreTest, ::testing::Values(BatchEngine::Sqlite, BatchEngine::Postgres),
                         batch_engine_name);

// Every byte value, in a pattern that differs from chunk to chunk.
std::string pattern(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 7 + i / kBatchFileChunkBytes) & 0xff);
  return s;
}

TEST_P(BatchFileStoreTest, AFileOfSeveralChunksRoundTripsAPieceAtATime) {
  const std::string bytes = pattern(3 * kBatchFileChunkBytes + 123);
  ASSERT_TRUE(put("file-big", bytes, 300 << 10).ok());
  EXPECT_TRUE(read_all("file-big") == bytes) << "the content changed";
  if (GetParam() == BatchEngine::Postgres) {
    EXPECT_EQ(chunk_rows(), 4);
  }
  // A line that straddles two chunks, and one at the very end.
  auto r = files_->open("file-big");
  ASSERT_TRUE(r.ok());
  const uint64_t edge = kBatchFileChunkBytes - 10;
  EXPECT_EQ(*(*r)->read_range(edge, 20), bytes.substr(edge, 20));
  EXPECT_EQ(*(*r)->read_range(bytes.size() - 5, 5), bytes.substr(bytes.size() - 5));
  EXPECT_EQ((*r)->read_range(bytes.size() - 5, 6).status().code(), StatusCode::DataLoss);
  EXPECT_EQ(*(*r)->read_at(bytes.size(), nullptr, 10), 0u);
}

TEST_P(BatchFileStoreTest, AWriteIsSeenWholeAtCommitOrNotAtAll) {
  {
    auto w = files_->create("file-a");
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->write(pattern(kBatchFileChunkBytes + 1)).ok());
    EXPECT_EQ(files_->open("file-a").status().code(), StatusCode::NotFound) << "seen before its commit";
  }
  EXPECT_EQ(files_->open("file-a").status().code(), StatusCode::NotFound) << "an abandoned write left content";
  EXPECT_EQ(chunk_rows(), 0) << "an abandoned write left chunks";
  ASSERT_TRUE(put("file-a", "first version", 4).ok());
  ASSERT_TRUE(put("file-a", "second", 100).ok());
  EXPECT_EQ(read_all("file-a"), "second");
  ASSERT_TRUE(put("file-empty", "", 1).ok());
  EXPECT_EQ(read_all("file-empty"), "") << "an empty file exists";
}

TEST_P(BatchFileStoreTest, RemovingAFileRemovesItsChunks) {
  ASSERT_TRUE(put("file-gone", pattern(2 * kBatchFileChunkBytes), kBatchFileChunkBytes).ok());
  ASSERT_TRUE(put("file-kept", "kept", 4).ok());
  ASSERT_TRUE(files_->remove("file-gone").ok());
  EXPECT_EQ(files_->open("file-gone").status().code(), StatusCode::NotFound);
  if (GetParam() == BatchEngine::Postgres) {
    EXPECT_EQ(chunk_rows(), 1);
  }
  EXPECT_EQ(read_all("file-kept"), "kept");
  EXPECT_TRUE(files_->remove("file-never").ok()) << "nothing to remove is no error";
}

TEST_P(BatchFileStoreTest, ASpooledUploadIsAdopted) {
  const std::string spooled = files_->scratch_dir() + "/upload.tmp";
  const std::string bytes = pattern(kBatchFileChunkBytes + 77);
  std::ofstream(spooled, std::ios::binary) << bytes;
  ASSERT_TRUE(files_->adopt("file-up", spooled).ok());
  EXPECT_FALSE(fs::exists(spooled));
  EXPECT_TRUE(read_all("file-up") == bytes);
}

}  // namespace
}  // namespace cellserve::fleet
