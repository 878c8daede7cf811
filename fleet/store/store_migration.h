// `cellserve hub migrate-store`: moves one hub's SQLite state into an empty PostgreSQL store, so
// that several hubs can then share it (docs/postgres.md, "Moving from SQLite").
//
// Every table the hub keeps (hub.db: processors, enrolment tokens, deployments with their sealed
// env as stored, replicas with their costs and open intervals, service history, API keys with
// usage, agreements, canaries, attestation pins) and, when given, the batch store's (batch.db:
// files, batches, lines; and the files' bytes, 1 MiB chunk rows, where the target's batch schema
// keeps them in batch_file_chunks) is copied row for row, column for column, into the PostgreSQL schema,
// which is brought up first as a hub would. Both sides' column lists are checked against the
// copy's, so a column added to either schema without being added here fails the migration
// instead of being dropped. The copy runs in one transaction on the target, under the schema
// migration lock (hubs starting against it wait): all or nothing. The target must hold no rows
// in any of those tables. What the hub runs with alone (the cluster tables of several hubs,
// quota holds of requests in flight) starts afresh.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace cellserve::fleet {

struct StoreMigration {
  std::string from;        // the hub's SQLite store (DATA_DIR/hub.db); must exist
  std::string batch_from;  // its batch store (DATA_DIR/batch.db); "" : no batches are copied
  std::string to;          // postgresql://... (docs/postgres.md)
  // The batch files' bytes, <dir>/<id>; "" : DIR_OF(batch_from)/batch/files. Copied into the
  // database when the target's batch schema keeps file contents there (batch_file_chunks).
  std::string batch_files_dir;
};

struct MigratedTable {
  std::string table;
  int64_t rows = 0;
};

// The rows copied, per table, in copy order. InvalidArgument without PostgreSQL support in this
// build or for a `to` that is not a PostgreSQL URL; NotFound when a source file is missing;
// InvalidArgument "the target store is not empty: ..." naming the tables that hold rows;
// Unavailable when the database cannot be reached. Messages never show the URL's password, nor
// any value copied.
Result<std::vector<MigratedTable>> migrate_store(const StoreMigration& migration);

}  // namespace cellserve::fleet
