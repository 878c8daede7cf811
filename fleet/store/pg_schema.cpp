#include "fleet/store/pg_schema.h"

#include <string>

namespace cellserve::fleet {
namespace {

// Types: BIGINT for Unix milliseconds, counters and byte counts (a uint64 keeps its bit pattern);
// DOUBLE PRECISION for prices, rates and costs; BOOLEAN for flags; TEXT for ids, names, JSON
// documents and lists. Replica states and enrolments are stored by name, as in SQLite. Keys that
// lists are ordered by compare bytewise (COLLATE "C"), as SQLite does, whatever the database's locale.
constexpr const char* kPgMigrations[] = {
    // 1: the schema of SQLite's version 18 (sqlite_schema.cpp), in one step.
    R"sql(
CREATE TABLE processors (
  id TEXT COLLATE "C" PRIMARY KEY,
  name TEXT NOT NULL,
  ram_bytes BIGINT NOT NULL,
  free_disk_bytes BIGINT NOT NULL,
  cores INTEGER NOT NULL,
  big_cores INTEGER NOT NULL,
  arch TEXT NOT NULL,
  os TEXT NOT NULL,
  cpu_features TEXT NOT NULL,
  prefill_tps DOUBLE PRECISION NOT NULL,
  decode_tps DOUBLE PRECISION NOT NULL,
  bench_shape TEXT NOT NULL,
  price_per_day DOUBLE PRECISION NOT NULL,
  attested BOOLEAN NOT NULL,
  online BOOLEAN NOT NULL,
  registered_ms BIGINT NOT NULL,
  last_seen_ms BIGINT NOT NULL,
  simulated BOOLEAN NOT NULL,
  enrollment TEXT NOT NULL,
  attestation TEXT NOT NULL,
  label TEXT NOT NULL,
  address TEXT NOT NULL
);
CREATE UNIQUE INDEX processors_label ON processors(label) WHERE label != '';
CREATE TABLE deployments (
  name TEXT COLLATE "C" PRIMARY KEY,
  created_ms BIGINT NOT NULL,
  secrets_version BIGINT NOT NULL,
  spec TEXT NOT NULL
);
CREATE TABLE replicas (
  deployment TEXT COLLATE "C" NOT NULL REFERENCES deployments(name) ON DELETE CASCADE,
  idx INTEGER NOT NULL,
  processor_id TEXT NOT NULL,
  price_per_day DOUBLE PRECISION NOT NULL,
  state TEXT NOT NULL,
  progress DOUBLE PRECISION NOT NULL,
  detail TEXT NOT NULL,
  prefill_tps DOUBLE PRECISION NOT NULL,
  decode_tps DOUBLE PRECISION NOT NULL,
  matched_ms BIGINT NOT NULL,
  ready_since_ms BIGINT NOT NULL,
  cost DOUBLE PRECISION NOT NULL,
  draining BOOLEAN NOT NULL,
  reloading BOOLEAN NOT NULL,
  serving TEXT NOT NULL,
  secrets_version BIGINT NOT NULL,
  PRIMARY KEY (deployment, idx)
);
CREATE INDEX replicas_by_processor ON replicas(processor_id);
CREATE TABLE enrollment_tokens (
  hash TEXT COLLATE "C" PRIMARY KEY,
  label TEXT NOT NULL,
  uses_left INTEGER NOT NULL,
  expires_ms BIGINT NOT NULL,
  created_ms BIGINT NOT NULL
);
CREATE TABLE api_keys (
  id TEXT COLLATE "C" PRIMARY KEY,
  hash TEXT NOT NULL UNIQUE,
  name TEXT NOT NULL,
  deployment TEXT NOT NULL,
  rpm INTEGER NOT NULL,
  tokens_per_day BIGINT NOT NULL,
  created_ms BIGINT NOT NULL,
  revoked BOOLEAN NOT NULL,
  requests BIGINT NOT NULL,
  tokens BIGINT NOT NULL,
  day BIGINT NOT NULL,
  day_tokens BIGINT NOT NULL,
  deployment_created_ms BIGINT NOT NULL
);
-- seq orders intervals that start in the same millisecond (SQLite's rowid).
CREATE TABLE service_history (
  seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  processor_id TEXT NOT NULL,
  deployment TEXT NOT NULL,
  idx INTEGER NOT NULL,
  model_sha256 TEXT NOT NULL,
  from_ms BIGINT NOT NULL,
  until_ms BIGINT NOT NULL
);
CREATE INDEX service_history_by_processor ON service_history(processor_id, from_ms);
CREATE INDEX service_history_open ON service_history(deployment, idx) WHERE until_ms = 0;
CREATE TABLE device_agreement (
  processor_id TEXT COLLATE "C" PRIMARY KEY,
  checks BIGINT NOT NULL,
  agreed BIGINT NOT NULL,
  lost BIGINT NOT NULL,
  recent_bits BIGINT NOT NULL,
  recent_count INTEGER NOT NULL,
  quarantined BOOLEAN NOT NULL,
  reason TEXT NOT NULL,
  changed_ms BIGINT NOT NULL
);
CREATE TABLE canaries (
  deployment TEXT COLLATE "C" PRIMARY KEY REFERENCES deployments(name) ON DELETE CASCADE,
  cases TEXT NOT NULL,
  every INTEGER NOT NULL
);
CREATE TABLE attestation_pins (
  processor_id TEXT COLLATE "C" PRIMARY KEY,
  key_sha256 TEXT NOT NULL,
  key_spki TEXT NOT NULL,
  challenge TEXT NOT NULL,
  verified_boot_key TEXT NOT NULL,
  boot_state TEXT NOT NULL,
  app_packages TEXT NOT NULL,
  app_digests TEXT NOT NULL,
  evidence TEXT NOT NULL,
  pinned_ms BIGINT NOT NULL,
  held TEXT NOT NULL,
  change_approved BOOLEAN NOT NULL,
  ecdh BOOLEAN NOT NULL
);
)sql",
    // 2: what several hubs sharing the database record about each other (cluster_store.h); SQLite's 19.
    R"sql(
CREATE TABLE cluster_hubs (
  id TEXT COLLATE "C" PRIMARY KEY,
  peer_url TEXT NOT NULL,
  started_ms BIGINT NOT NULL,
  heartbeat_ms BIGINT NOT NULL
);
CREATE TABLE cluster_tunnels (
  processor_id TEXT COLLATE "C" PRIMARY KEY,
  hub_id TEXT NOT NULL,
  connected_ms BIGINT NOT NULL
);
CREATE INDEX cluster_tunnels_by_hub ON cluster_tunnels(hub_id);
CREATE TABLE cluster_leases (
  name TEXT COLLATE "C" PRIMARY KEY,
  holder TEXT NOT NULL,
  token BIGINT NOT NULL,
  expires_ms BIGINT NOT NULL
);
)sql",
    // 3: quotas counted in the database (quota_store.h); SQLite's 20.
    R"sql(
CREATE TABLE api_key_holds (
  key_id TEXT COLLATE "C" NOT NULL,
  hub_id TEXT COLLATE "C" NOT NULL,
  tokens BIGINT NOT NULL,
  PRIMARY KEY (key_id, hub_id)
);
CREATE INDEX api_key_holds_by_hub ON api_key_holds(hub_id);
CREATE TABLE api_key_requests (
  key_id TEXT COLLATE "C" NOT NULL,
  at_ms BIGINT NOT NULL
);
CREATE INDEX api_key_requests_by_key ON api_key_requests(key_id, at_ms);
)sql",
    // 4: each deployment's autoscaling decisions (scaling_event_log.h); SQLite's 21.
    R"sql(
CREATE TABLE scaling_events (
  seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  deployment TEXT COLLATE "C" NOT NULL REFERENCES deployments(name) ON DELETE CASCADE,
  at_ms BIGINT NOT NULL,
  action TEXT NOT NULL,
  from_replicas INTEGER NOT NULL,
  to_replicas INTEGER NOT NULL,
  reason TEXT NOT NULL
);
CREATE INDEX scaling_events_by_deployment ON scaling_events(deployment, seq);
)sql",
};

}  // namespace

std::span<const char* const> pg_hub_schema_migrations() { return kPgMigrations; }

Status migrate_pg_schema(PgConnection& conn, std::span<const char* const> migrations, const char* version_table) {
  const std::string table = version_table;
  const int latest = static_cast<int>(migrations.size());
  PgTransaction tx(conn);
  CS_RETURN_IF_ERROR(tx.begin());
  // Held until COMMIT: a second hub waits here, then finds every migration recorded.
  CS_RETURN_IF_ERROR(conn.exec("SELECT pg_advisory_xact_lock($1)", PgParams().add(kPgMigrationLockKey)).status());
  const std::string create = "CREATE TABLE IF NOT EXISTS " + table +
                             " (version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())";
  CS_RETURN_IF_ERROR(conn.exec_script(create.c_str()));
  CS_ASSIGN_OR_RETURN(const PgResult current_row, conn.exec("SELECT coalesce(max(version), 0) FROM " + table));
  const int current = current_row.row(0).i32(0);
  if (current > latest) {
    return Status::unimplemented("the PostgreSQL store's schema version " + std::to_string(current) + " (" + table +
                                 ") is newer than this build's " + std::to_string(latest));
  }
  for (int v = current; v < latest; ++v) {
    CS_RETURN_IF_ERROR(conn.exec_script(migrations[static_cast<size_t>(v)]));
    CS_RETURN_IF_ERROR(conn.exec("INSERT INTO " + table + " (version) VALUES ($1)", PgParams().add(v + 1)).status());
  }
  return tx.commit();
}

}  // namespace cellserve::fleet
