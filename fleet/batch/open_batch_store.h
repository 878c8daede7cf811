// Which BatchStore a hub opens, as open_store.h picks its Store: a URL or a path.
#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "fleet/batch/batch_file_store.h"
#include "fleet/batch/batch_store.h"

namespace cellserve::fleet {

// A PostgreSQL URL (is_postgres_url) opens the PostgreSQL batch store (open_postgres_batch_store);
// anything else is the path of a SQLite file (open_sqlite_batch_store). InvalidArgument for a URL
// when this build has no PostgreSQL support (CELLSERVE_POSTGRES off), as open_store.
Result<std::unique_ptr<BatchStore>> open_batch_store(const std::string& url_or_path);

// Where the files' bytes go alongside that store: in the database of a PostgreSQL `store_url`
// (open_postgres_batch_file_store; `files_dir` is then only this hub's scratch folder), else in
// the folder `files_dir` (open_disk_batch_file_store).
Result<std::unique_ptr<BatchFileStore>> open_batch_file_store(const std::string& store_url,
                                                              const std::string& files_dir);

}  // namespace cellserve::fleet
