// The hub's PostgreSQL schema and how it is brought up to date. Migrations are versioned in the
// table cellserve_schema (one row per applied version) and run under a transaction-scoped
// advisory lock, so hubs that start at once against one database migrate it exactly once.
#pragma once

#include <cstdint>
#include <span>

#include "base/status.h"
#include "fleet/store/pg_connection.h"

namespace cellserve::fleet {

// The advisory lock key every hub migrates under: "cellserv" in ASCII (0x63656c6c73657276), a constant no other
// application is likely to pick.
inline constexpr int64_t kPgMigrationLockKey = 7162249995450937974;

// Migration v (0-based) takes the schema from version v to v + 1. Append only: a released
// migration never changes.
std::span<const char* const> pg_hub_schema_migrations();

// The table the hub's Store records its applied versions in. Another schema in the same database
// (the batch store's) keeps its own list and its own table.
inline constexpr const char* kPgHubSchemaTable = "cellserve_schema";

// In one transaction: takes the advisory lock (every schema migrates under the one key), reads
// the version recorded in `version_table` (a constant name, created when missing), applies each
// missing migration in order and records it. Unimplemented when the database's version is newer
// than this build's.
Status migrate_pg_schema(PgConnection& conn, std::span<const char* const> migrations,
                         const char* version_table = kPgHubSchemaTable);

}  // namespace cellserve::fleet
