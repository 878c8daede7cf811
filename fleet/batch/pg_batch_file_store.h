// The BatchFileStore in the PostgreSQL database that several hubs share (issue 46): each file is
// rows of batch_file_chunks(file_id, seq, data BYTEA), kBatchFileChunkBytes each, so any hub
// reads any file and none holds one whole in memory. The table is the batch schema's
// (pg_batch_schema.cpp).
#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "fleet/batch/batch_file_store.h"

namespace cellserve::fleet {

// Connects to `url` on a connection of its own (a download or a line's read does not wait for
// the batch store's statements). `scratch_dir`: this hub's local folder for spooled uploads.
// The batch schema must be migrated (open_postgres_batch_store does it).
Result<std::unique_ptr<BatchFileStore>> open_postgres_batch_file_store(const std::string& url,
                                                                       const std::string& scratch_dir);

}  // namespace cellserve::fleet
