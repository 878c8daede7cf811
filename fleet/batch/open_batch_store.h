// Which BatchStore a hub opens, as open_store.h picks its Store: a URL or a path.
#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "fleet/batch/batch_store.h"

namespace cellserve::fleet {

// Anything but a PostgreSQL URL (is_postgres_url) is the path of a SQLite file
// (open_sqlite_batch_store). Unimplemented for a URL: the batch store has no PostgreSQL
// implementation yet.
Result<std::unique_ptr<BatchStore>> open_batch_store(const std::string& url_or_path);

}  // namespace cellserve::fleet
