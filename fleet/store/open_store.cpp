#include "fleet/store/open_store.h"

#ifdef CELLSERVE_HAVE_POSTGRES
#include "fleet/store/pg_connection.h"
#include "fleet/store/pg_store.h"
#endif

namespace cellserve::fleet {

bool is_postgres_url(std::string_view url_or_path) {
  return url_or_path.starts_with("postgresql://") || url_or_path.starts_with("postgres://");
}

Result<std::unique_ptr<Store>> open_store(const std::string& url_or_path) {
  if (!is_postgres_url(url_or_path)) return open_sqlite_store(url_or_path);
#ifdef CELLSERVE_HAVE_POSTGRES
  return open_postgres_store(url_or_path);
#else
  return Status::invalid_argument("this build has no PostgreSQL support (configure with -DCELLSERVE_POSTGRES=ON)");
#endif
}

std::string store_display_name(const std::string& url_or_path) {
#ifdef CELLSERVE_HAVE_POSTGRES
  if (is_postgres_url(url_or_path)) return mask_postgres_url(url_or_path);
#endif
  // Without libpq nothing is connected to; still never print a password.
  if (is_postgres_url(url_or_path)) return url_or_path.substr(0, url_or_path.find("://")) + "://***";
  return url_or_path;
}

}  // namespace cellserve::fleet
