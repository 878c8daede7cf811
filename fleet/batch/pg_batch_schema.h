// The batch store's PostgreSQL schema: a migration list of its own, recorded in its own version
// table (kPgBatchSchemaTable) and applied under the hub's migration lock (pg_schema.h), so hubs
// that start at once against one database migrate it exactly once.
#pragma once

#include <span>

namespace cellserve::fleet {

inline constexpr const char* kPgBatchSchemaTable = "cellserve_batch_schema";

// Migration v (0-based) takes the batch schema from version v to v + 1. Append only.
std::span<const char* const> pg_batch_schema_migrations();

}  // namespace cellserve::fleet
