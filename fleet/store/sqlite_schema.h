// hub.db's schema, as the migrations that build it: SqliteStore runs the missing ones at open
// (migrate_schema in sqlite_db.h). A new version is a new entry at the end; entries never change.
#pragma once

#include <span>

namespace cellserve::fleet {

// migrations[i] moves the schema from version i to i + 1; each ends by setting user_version.
std::span<const char* const> hub_schema_migrations();

}  // namespace cellserve::fleet
