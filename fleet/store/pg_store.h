// The Store on PostgreSQL, for several hubs sharing one database (issue 46). Same contract as the
// SQLite store (store.h); pg_schema.cpp holds the schema and its migrations.
#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "fleet/store/store.h"

namespace cellserve::fleet {

// Connects to `url` (postgresql://... or postgres://..., any libpq URL), then brings the schema up
// to date under the migration lock (pg_schema.h). Unavailable when the server cannot be reached;
// messages show the URL with its password masked. The Store owns its one connection.
Result<std::unique_ptr<Store>> open_postgres_store(const std::string& url);

}  // namespace cellserve::fleet
