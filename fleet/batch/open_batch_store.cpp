#include "fleet/batch/open_batch_store.h"

#include "fleet/batch/sqlite_batch_store.h"
#include "fleet/store/open_store.h"
#ifdef CELLSERVE_HAVE_POSTGRES
#include "fleet/batch/pg_batch_file_store.h"
#include "fleet/batch/pg_batch_store.h"
#endif

namespace cellserve::fleet {

Result<std::unique_ptr<BatchStore>> open_batch_store(const std::string& url_or_path) {
  if (!is_postgres_url(url_or_path)) return open_sqlite_batch_store(url_or_path);
#ifdef CELLSERVE_HAVE_POSTGRES
  return open_postgres_batch_store(url_or_path);
#else
  return Status::invalid_argument("this build has no PostgreSQL support (configure with -DCELLSERVE_POSTGRES=ON)");
#endif
}

Result<std::unique_ptr<BatchFileStore>> open_batch_file_store(const std::string& store_url,
                                                              const std::string& files_dir) {
  if (!is_postgres_url(store_url)) return open_disk_batch_file_store(files_dir);
#ifdef CELLSERVE_HAVE_POSTGRES
  return open_postgres_batch_file_store(store_url, files_dir);
#else
  return Status::invalid_argument("this build has no PostgreSQL support (configure with -DCELLSERVE_POSTGRES=ON)");
#endif
}

}  // namespace cellserve::fleet
