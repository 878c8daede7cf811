// `cellserve hub migrate-store --from DATA_DIR/hub.db --to postgresql://... [--batch-from
// DATA_DIR/batch.db]`: one hub's SQLite state into an empty PostgreSQL store, in one transaction
// (fleet/store/store_migration.h; docs/postgres.md, "Moving from SQLite"). Prints the rows copied
// per table; never a value, nor the URL's password.
#include <cstdio>
#include <filesystem>
#include <memory>

#include "cli/commands.h"
#include "fleet/store/open_store.h"
#include "fleet/store/store_migration.h"

namespace cellserve::cli {

void add_hub_migrate_store_command(CLI::App& hub_cmd, int* exit_code) {
  auto m = std::make_shared<fleet::StoreMigration>();
  CLI::App* cmd = hub_cmd.add_subcommand(
      "migrate-store", "Copy a stopped hub's SQLite store (and batch store) into an empty PostgreSQL store");
  cmd->add_option("--from", m->from, "The hub's SQLite store, DATA_DIR/hub.db (stop the hub first)")->required();
  cmd->add_option("--to", m->to, "The PostgreSQL store, postgresql://USER:PASSWORD@HOST:PORT/DB (must be empty)")
      ->required();
  cmd->add_option("--batch-from", m->batch_from,
                  "The hub's batch store (default: batch.db beside --from, when it is there)");
  cmd->add_option("--batch-files", m->batch_files_dir,
                  "The batch files' folder (default: batch/files beside the batch store)");
  cmd->callback([m, exit_code] {
    fleet::StoreMigration run = *m;
    if (run.batch_from.empty()) {
      const auto beside = std::filesystem::path(run.from).parent_path() / "batch.db";
      std::error_code ec;
      if (std::filesystem::is_regular_file(beside, ec)) run.batch_from = beside.string();
    }
    auto copied = fleet::migrate_store(run);
    if (!copied.ok()) {
      print_error("hub migrate-store", copied.status().message());
      *exit_code = 1;
      return;
    }
    std::printf("copied %s%s into %s:\n", run.from.c_str(),
                run.batch_from.empty() ? "" : (" and " + run.batch_from).c_str(),
                fleet::store_display_name(run.to).c_str());
    for (const fleet::MigratedTable& t : *copied) {
      std::printf("  %-18s %lld rows\n", t.table.c_str(), static_cast<long long>(t.rows));
    }
    *exit_code = 0;
  });
}

}  // namespace cellserve::cli
