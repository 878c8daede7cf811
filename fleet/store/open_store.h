// Which Store a hub opens: `cellserve hub --store URL_OR_PATH` (or $CELLSERVE_STORE).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"
#include "fleet/store/store.h"

namespace cellserve::fleet {

// True for a PostgreSQL URL (postgresql:// or postgres://).
bool is_postgres_url(std::string_view url_or_path);

// A PostgreSQL URL opens the PostgreSQL store (open_postgres_store); anything else is the path of
// a SQLite file (open_sqlite_store). InvalidArgument for a URL when this build has no PostgreSQL
// support (CELLSERVE_POSTGRES off).
Result<std::unique_ptr<Store>> open_store(const std::string& url_or_path);

// `url_or_path` as a log may show it: a URL's password is masked.
std::string store_display_name(const std::string& url_or_path);

}  // namespace cellserve::fleet
