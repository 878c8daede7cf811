#include "fleet/batch/open_batch_store.h"

#include "fleet/batch/sqlite_batch_store.h"
#include "fleet/store/open_store.h"

namespace cellserve::fleet {

Result<std::unique_ptr<BatchStore>> open_batch_store(const std::string& url_or_path) {
  if (!is_postgres_url(url_or_path)) return open_sqlite_batch_store(url_or_path);
  return Status::unimplemented("the batch store has no PostgreSQL implementation yet");
}

}  // namespace cellserve::fleet
