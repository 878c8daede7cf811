// The batch store on PostgreSQL, for several hubs sharing one database (issue 46). Same contract
// as the SQLite batch store (batch_store.h); pg_batch_schema.cpp holds its schema.
#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "fleet/batch/batch_store.h"

namespace cellserve::fleet {

// Connects to `url` (postgresql://... or postgres://...), then brings the batch schema up to date
// under the migration lock. Unavailable when the server cannot be reached; messages mask the
// URL's password. The store owns its one connection.
Result<std::unique_ptr<BatchStore>> open_postgres_batch_store(const std::string& url);

}  // namespace cellserve::fleet
