// The batch store on SQLite: the hub's own database file (DATA_DIR/batch.db), apart from hub.db.
#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "fleet/batch/batch_store.h"

namespace cellserve::fleet {

// Opens (creating or migrating) the database at `path`. DataLoss when it is not one.
Result<std::unique_ptr<BatchStore>> open_sqlite_batch_store(const std::string& path);

}  // namespace cellserve::fleet
