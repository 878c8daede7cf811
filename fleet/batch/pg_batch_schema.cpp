#include "fleet/batch/pg_batch_schema.h"

namespace cellserve::fleet {
namespace {

// The tables of batch.db's version 3 (sqlite_batch_store.cpp) in one step, with PostgreSQL's
// types (BIGINT for milliseconds, byte counts and offsets). Ids and the names lists are ordered
// by compare bytewise (COLLATE "C"), as SQLite does. A line's place in its input file is
// byte_offset and byte_length: OFFSET is a reserved word here.
constexpr const char* kPgBatchMigrations[] = {
    R"sql(
CREATE TABLE files (
  id TEXT COLLATE "C" PRIMARY KEY,
  deployment TEXT NOT NULL,
  filename TEXT NOT NULL,
  purpose TEXT NOT NULL,
  bytes BIGINT NOT NULL,
  created_ms BIGINT NOT NULL,
  deployment_created_ms BIGINT NOT NULL DEFAULT 0,
  owner_key TEXT NOT NULL DEFAULT '',
  expires_ms BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX files_by_deployment ON files(deployment, created_ms);
CREATE INDEX files_by_expiry ON files(expires_ms) WHERE expires_ms > 0;
CREATE TABLE batches (
  id TEXT COLLATE "C" PRIMARY KEY,
  deployment TEXT NOT NULL,
  endpoint TEXT NOT NULL,
  input_file_id TEXT NOT NULL,
  key_id TEXT NOT NULL,
  completion_window TEXT NOT NULL,
  metadata TEXT NOT NULL,
  status TEXT NOT NULL,
  errors TEXT NOT NULL,
  output_file_id TEXT NOT NULL,
  error_file_id TEXT NOT NULL,
  created_ms BIGINT NOT NULL,
  in_progress_ms BIGINT NOT NULL,
  expires_ms BIGINT NOT NULL,
  finalizing_ms BIGINT NOT NULL,
  completed_ms BIGINT NOT NULL,
  failed_ms BIGINT NOT NULL,
  expired_ms BIGINT NOT NULL,
  cancelling_ms BIGINT NOT NULL,
  cancelled_ms BIGINT NOT NULL,
  total INTEGER NOT NULL,
  completed INTEGER NOT NULL,
  failed INTEGER NOT NULL,
  deployment_created_ms BIGINT NOT NULL DEFAULT 0,
  output_expires_after_s BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX batches_by_deployment ON batches(deployment, created_ms);
CREATE INDEX batches_by_status ON batches(status);
CREATE TABLE batch_lines (
  batch_id TEXT NOT NULL REFERENCES batches(id) ON DELETE CASCADE,
  line INTEGER NOT NULL,
  custom_id TEXT NOT NULL,
  byte_offset BIGINT NOT NULL,
  byte_length BIGINT NOT NULL,
  state TEXT NOT NULL,
  attempts INTEGER NOT NULL,
  result TEXT NOT NULL,
  device TEXT COLLATE "C" NOT NULL DEFAULT '',
  ended_ms BIGINT NOT NULL DEFAULT 0,
  PRIMARY KEY (batch_id, line)
);
CREATE INDEX batch_lines_by_state ON batch_lines(batch_id, state, line);
)sql",
    // 2: a line's lease names its holding hub and expires, so that the lines of a hub that died
    // are leased again by the others; a batch's finalization is claimed the same way; file
    // contents are rows of chunks (pg_batch_file_store.cpp).
    R"sql(
ALTER TABLE batch_lines ADD COLUMN holder TEXT NOT NULL DEFAULT '';
ALTER TABLE batch_lines ADD COLUMN lease_until_ms BIGINT NOT NULL DEFAULT 0;
CREATE INDEX batch_lines_by_holder ON batch_lines(holder) WHERE state = 'leased';
ALTER TABLE batches ADD COLUMN finalizer TEXT NOT NULL DEFAULT '';
ALTER TABLE batches ADD COLUMN finalize_until_ms BIGINT NOT NULL DEFAULT 0;
CREATE TABLE batch_file_chunks (
  file_id TEXT COLLATE "C" NOT NULL,
  seq INTEGER NOT NULL,
  data BYTEA NOT NULL,
  PRIMARY KEY (file_id, seq)
);
)sql",
};

}  // namespace

std::span<const char* const> pg_batch_schema_migrations() { return kPgBatchMigrations; }

}  // namespace cellserve::fleet
