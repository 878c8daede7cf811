#include "fleet/store/sqlite_schema.h"

namespace cellserve::fleet {
namespace {

constexpr const char* kMigrations[] = {
    R"sql(
CREATE TABLE processors (
  id TEXT PRIMARY KEY NOT NULL,
  name TEXT NOT NULL,
  ram_bytes INTEGER NOT NULL,
  free_disk_bytes INTEGER NOT NULL,
  cores INTEGER NOT NULL,
  big_cores INTEGER NOT NULL,
  arch TEXT NOT NULL,
  os TEXT NOT NULL,
  cpu_features TEXT NOT NULL,
  prefill_tps REAL NOT NULL,
  decode_tps REAL NOT NULL,
  bench_shape TEXT NOT NULL,
  price_per_day REAL NOT NULL,
  attested INTEGER NOT NULL,
  online INTEGER NOT NULL,
  registered_ms INTEGER NOT NULL,
  last_seen_ms INTEGER NOT NULL
);
CREATE TABLE deployments (
  name TEXT PRIMARY KEY NOT NULL,
  model_url TEXT NOT NULL,
  model_sha256 TEXT NOT NULL,
  min_ram_bytes INTEGER NOT NULL,
  min_cores INTEGER NOT NULL,
  req_arch TEXT NOT NULL,
  min_decode_tps REAL NOT NULL,
  attested_only INTEGER NOT NULL,
  allow_list TEXT NOT NULL,
  replicas INTEGER NOT NULL,
  spares INTEGER NOT NULL,
  max_price_per_day REAL NOT NULL,
  ctx_size INTEGER NOT NULL,
  parallel INTEGER NOT NULL,
  threads INTEGER NOT NULL,
  lora TEXT NOT NULL,
  env TEXT NOT NULL,
  created_ms INTEGER NOT NULL
);
CREATE TABLE replicas (
  deployment TEXT NOT NULL REFERENCES deployments(name) ON DELETE CASCADE,
  idx INTEGER NOT NULL,
  processor_id TEXT NOT NULL,
  price_per_day REAL NOT NULL,
  state TEXT NOT NULL,
  progress REAL NOT NULL,
  detail TEXT NOT NULL,
  prefill_tps REAL NOT NULL,
  decode_tps REAL NOT NULL,
  matched_ms INTEGER NOT NULL,
  ready_since_ms INTEGER NOT NULL,
  cost REAL NOT NULL,
  PRIMARY KEY (deployment, idx)
);
CREATE INDEX replicas_by_processor ON replicas(processor_id);
PRAGMA user_version = 1;
)sql",
    // 2: simulated processors (`agent --simulate`) and deployments ([engine] simulated); rows of
    // older files read as not simulated.
    R"sql(
ALTER TABLE processors ADD COLUMN simulated INTEGER NOT NULL DEFAULT 0;
ALTER TABLE deployments ADD COLUMN simulated INTEGER NOT NULL DEFAULT 0;
PRAGMA user_version = 2;
)sql",
    // 3: the deployment endpoint's settings (GatewaySettings).
    R"sql(
ALTER TABLE deployments ADD COLUMN alias TEXT NOT NULL DEFAULT '';
ALTER TABLE deployments ADD COLUMN queue_max INTEGER NOT NULL DEFAULT 64;
ALTER TABLE deployments ADD COLUMN queue_timeout_ms INTEGER NOT NULL DEFAULT 30000;
PRAGMA user_version = 3;
)sql",
    // 4: replicas that take no new requests (drain, scale down).
    R"sql(
ALTER TABLE replicas ADD COLUMN draining INTEGER NOT NULL DEFAULT 0;
PRAGMA user_version = 4;
)sql",
    // 5: hedging (GatewaySettings).
    R"sql(
ALTER TABLE deployments ADD COLUMN hedge_max_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE deployments ADD COLUMN hedge_delay_ms INTEGER NOT NULL DEFAULT 0;
PRAGMA user_version = 5;
)sql",
    // 6: each replica row's own serving (model and engine) for rolling updates, copied from its
    // deployment for rows of older files; rows drained to be reloaded in place.
    R"sql(
ALTER TABLE replicas ADD COLUMN model_url TEXT NOT NULL DEFAULT '';
ALTER TABLE replicas ADD COLUMN model_sha256 TEXT NOT NULL DEFAULT '';
ALTER TABLE replicas ADD COLUMN ctx_size INTEGER NOT NULL DEFAULT 0;
ALTER TABLE replicas ADD COLUMN parallel INTEGER NOT NULL DEFAULT 0;
ALTER TABLE replicas ADD COLUMN threads INTEGER NOT NULL DEFAULT 0;
ALTER TABLE replicas ADD COLUMN lora TEXT NOT NULL DEFAULT '';
ALTER TABLE replicas ADD COLUMN simulated INTEGER NOT NULL DEFAULT 0;
ALTER TABLE replicas ADD COLUMN reloading INTEGER NOT NULL DEFAULT 0;
UPDATE replicas SET (model_url, model_sha256, ctx_size, parallel, threads, lora, simulated) =
  (SELECT d.model_url, d.model_sha256, d.ctx_size, d.parallel, d.threads, d.lora, d.simulated
   FROM deployments d WHERE d.name = replicas.deployment);
PRAGMA user_version = 6;
)sql",
    // 7: enrolment. Processors of older files joined before it existed: enrolled.
    R"sql(
ALTER TABLE processors ADD COLUMN enrollment TEXT NOT NULL DEFAULT 'enrolled';
CREATE TABLE enrollment_tokens (
  hash TEXT PRIMARY KEY NOT NULL,
  label TEXT NOT NULL,
  uses_left INTEGER NOT NULL,
  expires_ms INTEGER NOT NULL,
  created_ms INTEGER NOT NULL
);
PRAGMA user_version = 7;
)sql",
    // 8: API keys with quotas and their usage.
    R"sql(
CREATE TABLE api_keys (
  id TEXT PRIMARY KEY NOT NULL,
  hash TEXT NOT NULL UNIQUE,
  name TEXT NOT NULL,
  deployment TEXT NOT NULL,
  rpm INTEGER NOT NULL,
  tokens_per_day INTEGER NOT NULL,
  created_ms INTEGER NOT NULL,
  revoked INTEGER NOT NULL,
  requests INTEGER NOT NULL,
  tokens INTEGER NOT NULL,
  day INTEGER NOT NULL,
  day_tokens INTEGER NOT NULL
);
PRAGMA user_version = 8;
)sql",
    // 9: secrets delivered to devices: each deployment's secrets version (raised whenever its
    // [env] changes), and the version each replica's device has acknowledged opening.
    R"sql(
ALTER TABLE deployments ADD COLUMN secrets_version INTEGER NOT NULL DEFAULT 1;
ALTER TABLE replicas ADD COLUMN secrets_version INTEGER NOT NULL DEFAULT 0;
PRAGMA user_version = 9;
)sql",
    // 10: the attestation verdict (or why there is none) of each processor's last registration.
    R"sql(
ALTER TABLE processors ADD COLUMN attestation TEXT NOT NULL DEFAULT '';
PRAGMA user_version = 10;
)sql",
    // 11: the slots batch work leaves to interactive requests.
    R"sql(
ALTER TABLE deployments ADD COLUMN batch_reserve_slots INTEGER NOT NULL DEFAULT 1;
PRAGMA user_version = 11;
)sql",
    // 12: requirements on the devices' live state (battery, charger, temperature).
    R"sql(
ALTER TABLE deployments ADD COLUMN charging_only INTEGER NOT NULL DEFAULT 0;
ALTER TABLE deployments ADD COLUMN min_battery INTEGER NOT NULL DEFAULT 0;
ALTER TABLE deployments ADD COLUMN max_temperature_c REAL NOT NULL DEFAULT 0;
PRAGMA user_version = 12;
)sql",
    // 13: the name the operator fixes for a device at approval (what allow lists may name; unique
    // when set), the address its last join came from (pending devices are bounded by it), and a
    // deployment's deadline on a replica's first response byte (0: derived from the request).
    R"sql(
ALTER TABLE processors ADD COLUMN label TEXT NOT NULL DEFAULT '';
ALTER TABLE processors ADD COLUMN address TEXT NOT NULL DEFAULT '';
CREATE UNIQUE INDEX processors_label ON processors(label) WHERE label != '';
ALTER TABLE deployments ADD COLUMN first_byte_timeout_ms INTEGER NOT NULL DEFAULT 0;
PRAGMA user_version = 13;
)sql",
    // 14: an API key opens only the deployment created with it (name and created_ms); 0: bound
    // to the deployment of its name when the hub starts (keys stored before this).
    R"sql(
ALTER TABLE api_keys ADD COLUMN deployment_created_ms INTEGER NOT NULL DEFAULT 0;
PRAGMA user_version = 14;
)sql",
    // 15: which processor served which replica, with which model, when (Store::service_history);
    // until_ms 0 while it lasts.
    R"sql(
CREATE TABLE service_history (
  processor_id TEXT NOT NULL,
  deployment TEXT NOT NULL,
  idx INTEGER NOT NULL,
  model_sha256 TEXT NOT NULL,
  from_ms INTEGER NOT NULL,
  until_ms INTEGER NOT NULL
);
CREATE INDEX service_history_by_processor ON service_history(processor_id, from_ms);
CREATE INDEX service_history_open ON service_history(deployment, idx) WHERE until_ms = 0;
PRAGMA user_version = 15;
)sql",
    // 16: a deployment's spec is one document (fleet/spec/deployment_spec.h,
    // deployment_spec_document), kept beside the columns queries use (name, created_ms) and the
    // store's own secrets_version; a replica row's serving likewise. The documents of existing
    // rows are built from their columns, which then go: a new spec field needs no migration.
    // Doubles become text with 17 significant digits ("%!" : SQLite's exact form), as read back.
    R"sql(
ALTER TABLE deployments ADD COLUMN spec TEXT NOT NULL DEFAULT '';
UPDATE deployments SET spec = json_object(
  'name', name, 'model_url', model_url, 'model_sha256', model_sha256, 'replicas', replicas, 'spares', spares,
  'max_price_per_day', printf('%!.17g', max_price_per_day),
  'requirements', json_object('min_ram_bytes', min_ram_bytes, 'min_cores', min_cores, 'arch', req_arch,
    'min_decode_tps', printf('%!.17g', min_decode_tps), 'attested_only', json(CASE WHEN attested_only THEN 'true' ELSE 'false' END),
    'allow', json(allow_list), 'charging_only', json(CASE WHEN charging_only THEN 'true' ELSE 'false' END),
    'min_battery', min_battery, 'max_temperature_c', printf('%!.17g', max_temperature_c)),
  'engine', json_object('ctx_size', ctx_size, 'parallel', parallel, 'threads', threads, 'lora', json(lora),
    'simulated', json(CASE WHEN simulated THEN 'true' ELSE 'false' END)),
  'gateway', json_object('alias', alias, 'queue_max', queue_max, 'queue_timeout_ms', queue_timeout_ms,
    'hedge_max_tokens', hedge_max_tokens, 'hedge_delay_ms', hedge_delay_ms,
    'batch_reserve_slots', batch_reserve_slots, 'first_byte_timeout_ms', first_byte_timeout_ms),
  'env', json(env));
ALTER TABLE deployments DROP COLUMN model_url;
ALTER TABLE deployments DROP COLUMN model_sha256;
ALTER TABLE deployments DROP COLUMN min_ram_bytes;
ALTER TABLE deployments DROP COLUMN min_cores;
ALTER TABLE deployments DROP COLUMN req_arch;
ALTER TABLE deployments DROP COLUMN min_decode_tps;
ALTER TABLE deployments DROP COLUMN attested_only;
ALTER TABLE deployments DROP COLUMN allow_list;
ALTER TABLE deployments DROP COLUMN replicas;
ALTER TABLE deployments DROP COLUMN spares;
ALTER TABLE deployments DROP COLUMN max_price_per_day;
ALTER TABLE deployments DROP COLUMN ctx_size;
ALTER TABLE deployments DROP COLUMN parallel;
ALTER TABLE deployments DROP COLUMN threads;
ALTER TABLE deployments DROP COLUMN lora;
ALTER TABLE deployments DROP COLUMN env;
ALTER TABLE deployments DROP COLUMN simulated;
ALTER TABLE deployments DROP COLUMN alias;
ALTER TABLE deployments DROP COLUMN queue_max;
ALTER TABLE deployments DROP COLUMN queue_timeout_ms;
ALTER TABLE deployments DROP COLUMN hedge_max_tokens;
ALTER TABLE deployments DROP COLUMN hedge_delay_ms;
ALTER TABLE deployments DROP COLUMN batch_reserve_slots;
ALTER TABLE deployments DROP COLUMN charging_only;
ALTER TABLE deployments DROP COLUMN min_battery;
ALTER TABLE deployments DROP COLUMN max_temperature_c;
ALTER TABLE deployments DROP COLUMN first_byte_timeout_ms;
ALTER TABLE replicas ADD COLUMN serving TEXT NOT NULL DEFAULT '';
UPDATE replicas SET serving = json_object('model_url', model_url, 'model_sha256', model_sha256,
  'engine', json_object('ctx_size', ctx_size, 'parallel', parallel, 'threads', threads, 'lora', json(lora),
    'simulated', json(CASE WHEN simulated THEN 'true' ELSE 'false' END)));
ALTER TABLE replicas DROP COLUMN model_url;
ALTER TABLE replicas DROP COLUMN model_sha256;
ALTER TABLE replicas DROP COLUMN ctx_size;
ALTER TABLE replicas DROP COLUMN parallel;
ALTER TABLE replicas DROP COLUMN threads;
ALTER TABLE replicas DROP COLUMN lora;
ALTER TABLE replicas DROP COLUMN simulated;
PRAGMA user_version = 16;
)sql",
    // Spot checks: each device's agreement record, and each deployment's canaries (issue 45).
    R"sql(
CREATE TABLE device_agreement (
  processor_id TEXT PRIMARY KEY NOT NULL,
  checks INTEGER NOT NULL,
  agreed INTEGER NOT NULL,
  lost INTEGER NOT NULL,
  recent_bits INTEGER NOT NULL,
  recent_count INTEGER NOT NULL,
  quarantined INTEGER NOT NULL,
  reason TEXT NOT NULL,
  changed_ms INTEGER NOT NULL
);
CREATE TABLE canaries (
  deployment TEXT PRIMARY KEY NOT NULL REFERENCES deployments(name) ON DELETE CASCADE,
  cases TEXT NOT NULL,
  every INTEGER NOT NULL
);
PRAGMA user_version = 17;
)sql",
    // 18: the attested key each attested device is pinned to (records.h, AttestationPin).
    R"sql(
CREATE TABLE attestation_pins (
  processor_id TEXT PRIMARY KEY NOT NULL,
  key_sha256 TEXT NOT NULL,
  key_spki TEXT NOT NULL,
  challenge TEXT NOT NULL,
  verified_boot_key TEXT NOT NULL,
  boot_state TEXT NOT NULL,
  app_packages TEXT NOT NULL,
  app_digests TEXT NOT NULL,
  evidence TEXT NOT NULL,
  pinned_ms INTEGER NOT NULL,
  held TEXT NOT NULL,
  change_approved INTEGER NOT NULL,
  ecdh INTEGER NOT NULL
);
PRAGMA user_version = 18;
)sql",
    // 19: what several hubs sharing a database record about each other (cluster_store.h); on one
    // hub's file they hold that hub alone.
    R"sql(
CREATE TABLE cluster_hubs (
  id TEXT PRIMARY KEY NOT NULL,
  peer_url TEXT NOT NULL,
  started_ms INTEGER NOT NULL,
  heartbeat_ms INTEGER NOT NULL
);
CREATE TABLE cluster_tunnels (
  processor_id TEXT PRIMARY KEY NOT NULL,
  hub_id TEXT NOT NULL,
  connected_ms INTEGER NOT NULL
);
CREATE INDEX cluster_tunnels_by_hub ON cluster_tunnels(hub_id);
CREATE TABLE cluster_leases (
  name TEXT PRIMARY KEY NOT NULL,
  holder TEXT NOT NULL,
  token INTEGER NOT NULL,
  expires_ms INTEGER NOT NULL
);
PRAGMA user_version = 19;
)sql",
    // 20: quotas counted in the database (quota_store.h): the tokens each hub's requests in
    // flight hold, and each rpm key's requests of the last minute.
    R"sql(
CREATE TABLE api_key_holds (
  key_id TEXT NOT NULL,
  hub_id TEXT NOT NULL,
  tokens INTEGER NOT NULL,
  PRIMARY KEY (key_id, hub_id)
);
CREATE INDEX api_key_holds_by_hub ON api_key_holds(hub_id);
CREATE TABLE api_key_requests (
  key_id TEXT NOT NULL,
  at_ms INTEGER NOT NULL
);
CREATE INDEX api_key_requests_by_key ON api_key_requests(key_id, at_ms);
PRAGMA user_version = 20;
)sql",
    // 21: each deployment's autoscaling decisions (scaling_event_log.h), in the order made.
    R"sql(
CREATE TABLE scaling_events (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  deployment TEXT NOT NULL REFERENCES deployments(name) ON DELETE CASCADE,
  at_ms INTEGER NOT NULL,
  action TEXT NOT NULL,
  from_replicas INTEGER NOT NULL,
  to_replicas INTEGER NOT NULL,
  reason TEXT NOT NULL
);
CREATE INDEX scaling_events_by_deployment ON scaling_events(deployment, seq);
PRAGMA user_version = 21;
)sql",
};

}  // namespace

std::span<const char* const> hub_schema_migrations() { return kMigrations; }

}  // namespace cellserve::fleet
