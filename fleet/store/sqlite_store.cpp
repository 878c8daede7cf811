// SqliteStore: the Store on one SQLite connection behind one mutex.
//
// Schema (sqlite_schema.cpp, PRAGMA user_version): one table per record type, one column per scalar
// field, list fields as JSON text (list_codec.h). A deployment's spec and a replica row's serving
// are each one JSON document (fleet/spec/deployment_spec.h), beside the columns queries use. Replica rows reference
// their deployment with ON DELETE CASCADE. Replica states are stored by name (replica_state_name) so the file reads
// well in the sqlite3 shell.
#include <algorithm>
#include <mutex>

#include "fleet/spec/deployment_spec.h"
#include "fleet/store/list_codec.h"
#include "fleet/store/replica_cost.h"
#include "fleet/store/sqlite_cluster_store.h"
#include "fleet/store/sqlite_db.h"
#include "fleet/store/sqlite_quota_store.h"
#include "fleet/store/sqlite_scaling_event_log.h"
#include "fleet/store/sqlite_schema.h"
#include "fleet/store/store.h"

namespace cellserve::fleet {
namespace {

constexpr const char* kProcessorColumns =
    "id, name, ram_bytes, free_disk_bytes, cores, big_cores, arch, os, cpu_features, prefill_tps, decode_tps, "
    "bench_shape, price_per_day, attested, online, registered_ms, last_seen_ms, simulated, enrollment, attestation, "
    "label, address";
constexpr const char* kDeploymentColumns = "name, created_ms, secrets_version, spec";
constexpr const char* kReplicaColumns =
    "deployment, idx, processor_id, price_per_day, state, progress, detail, prefill_tps, decode_tps, matched_ms, "
    "ready_since_ms, cost, draining, reloading, serving, secrets_version";

std::string select_from(const char* columns, const char* rest) { return std::string("SELECT ") + columns + " " + rest; }

Result<Processor> read_processor(const SqliteStmt& s) {
  Processor p;
  p.id = s.text(0);
  p.name = s.text(1);
  p.specs.ram_bytes = s.u64(2);
  p.specs.free_disk_bytes = s.u64(3);
  p.specs.cores = s.i32(4);
  p.specs.big_cores = s.i32(5);
  p.specs.arch = s.text(6);
  p.specs.os = s.text(7);
  CS_ASSIGN_OR_RETURN(p.specs.cpu_features, decode_string_list(s.text(8), "cpu_features"));
  p.benchmark.prefill_tps = s.f64(9);
  p.benchmark.decode_tps = s.f64(10);
  p.benchmark.shape = s.text(11);
  p.price_per_day = s.f64(12);
  p.attested = s.i64(13) != 0;
  p.online = s.i64(14) != 0;
  p.registered_ms = s.i64(15);
  p.last_seen_ms = s.i64(16);
  p.simulated = s.i64(17) != 0;
  const std::string enrollment = s.text(18);
  const std::optional<Enrollment> e = parse_enrollment(enrollment);
  if (!e) return Status::data_loss("stored enrollment '" + enrollment + "' is unknown");
  p.enrollment = *e;
  p.attestation = s.text(19);
  p.label = s.text(20);
  p.address = s.text(21);
  return p;
}

// A row of kDeploymentColumns.
Result<Deployment> read_deployment(const SqliteStmt& s) {
  Deployment d;
  const std::string name = s.text(0);
  d.created_ms = s.i64(1);
  d.secrets_version = s.i64(2);
  CS_ASSIGN_OR_RETURN(d.spec, read_deployment_spec_document(s.text(3)));
  if (d.spec.name != name) return Status::data_loss("stored deployment '" + name + "': its spec names another");
  return d;
}

Result<Replica> read_replica(const SqliteStmt& s) {
  Replica r;
  r.deployment = s.text(0);
  r.index = s.i32(1);
  r.processor_id = s.text(2);
  r.price_per_day = s.f64(3);
  std::string state = s.text(4);
  std::optional<ReplicaState> parsed = parse_replica_state(state);
  if (!parsed) return Status::data_loss("stored replica state '" + state + "' is unknown");
  r.state = *parsed;
  r.progress = s.f64(5);
  r.detail = s.text(6);
  r.prefill_tps = s.f64(7);
  r.decode_tps = s.f64(8);
  r.matched_ms = s.i64(9);
  r.ready_since_ms = s.i64(10);
  r.cost = s.f64(11);
  r.draining = s.i64(12) != 0;
  r.reloading = s.i64(13) != 0;
  CS_ASSIGN_OR_RETURN(r.serving, read_serving_document(s.text(14)));
  r.secrets_version = s.i64(15);
  return r;
}

class SqliteStore final : public Store {
 public:
  explicit SqliteStore(std::unique_ptr<SqliteDb> db) : db_(std::move(db)) {}

  Status migrate();

  Status upsert_processor(const Processor& p) override;
  Result<std::optional<Processor>> processor(const std::string& id) override;
  Result<std::vector<Processor>> processors() override;
  Status set_processor_online(const std::string& id, bool online, int64_t now_ms) override;
  Status touch_processors(const std::vector<std::string>& ids, int64_t now_ms) override;
  Status create_deployment(const Deployment& d) override;
  Result<std::optional<Deployment>> deployment(const std::string& name) override;
  Result<std::vector<Deployment>> deployments() override;
  Status delete_deployment(const std::string& name, int64_t now_ms) override;
  Result<std::vector<Replica>> replicas(const std::string& deployment) override;
  Status update_replica(const Replica& r, int64_t now_ms) override;
  Status mark_processor_offline(const std::string& id, int64_t now_ms) override;
  Status scale_deployment(const std::string& name, std::optional<int> replicas, std::optional<int> spares,
                          int64_t now_ms) override;
  Result<bool> rescale_replicas(const std::string& name, int from_replicas, int to_replicas, int64_t now_ms) override;
  Status remove_replica(const std::string& deployment, int index, int64_t now_ms) override;
  Status update_deployment_spec(const DeploymentSpec& spec) override;
  Status set_enrollment(const std::string& id, Enrollment e, const std::optional<std::string>& label,
                        int64_t now_ms) override;
  Result<int> remove_pending_processors(int64_t seen_before_ms) override;
  Status add_enrollment_token(const EnrollmentToken& t) override;
  Result<bool> redeem_enrollment_token(const std::string& hash, int64_t now_ms) override;
  Result<std::vector<EnrollmentToken>> enrollment_tokens() override;
  Status withdraw_enrollment_token(const std::string& id) override;
  Status add_api_key(const ApiKey& k) override;
  Status update_api_key(const ApiKey& k) override;
  Result<std::vector<ApiKey>> api_keys() override;
  Status add_replica(const Replica& r) override;
  Status save_agreement(const DeviceAgreement& a) override;
  Result<std::vector<DeviceAgreement>> agreements() override;
  Status set_canaries(const CanarySet& c) override;
  Result<std::vector<CanarySet>> canaries() override;
  Result<std::vector<ServiceInterval>> service_history(const std::string& id, int64_t from_ms, int64_t until_ms,
                                                       int limit) override;
  Result<std::optional<AttestationPin>> attestation_pin(const std::string& id) override;
  Result<std::vector<AttestationPin>> attestation_pins() override;
  Status put_attestation_pin(const AttestationPin& pin) override;
  double replica_cost(const Replica& r, int64_t now_ms) const override {
    return r.cost + open_interval_cost(r, now_ms);
  }
  ClusterStore& cluster() override { return cluster_; }
  QuotaStore& quotas() override { return quotas_; }
  ScalingEventLog& scaling_events() override { return scaling_events_; }

 private:
  // Each REQUIRES mu_ held.
  Result<std::optional<Replica>> load_replica(const std::string& deployment, int index);
  Status write_replica(const Replica& r);
  // scale_deployment's work inside the caller's transaction; a count not given keeps the stored one.
  // False, writing nothing, when `expect_replicas` is given and is not the stored replica count.
  Result<bool> scale_in_transaction(const std::string& name, std::optional<int> replicas, std::optional<int> spares,
                                    std::optional<int> expect_replicas);
  // Keeps service_history as row `prev` becomes `next` at now_ms (store.h, service_history).
  Status note_service(const Replica& prev, const Replica& next, int64_t now_ms);
  // Closes at now_ms the open intervals `where` selects (an SQL condition on ?2, bound to `key`).
  Status end_service(const char* where, const std::string& key, int64_t now_ms);

  std::mutex mu_;
  std::unique_ptr<SqliteDb> db_;           // guarded by mu_
  SqliteClusterStore cluster_{mu_, *db_};  // after mu_ and the connection it uses
  SqliteQuotaStore quotas_{mu_, *db_};
  SqliteScalingEventLog scaling_events_{mu_, *db_};
};

Status SqliteStore::migrate() {
  std::lock_guard lock(mu_);
  return migrate_schema(*db_, hub_schema_migrations(), "hub.db");
}

Status SqliteStore::upsert_processor(const Processor& p) {
  std::lock_guard lock(mu_);
  // registered_ms: the first non-zero value sticks. enrollment and label: written when the row is
  // created, then only by set_enrollment (a registration never writes them back).
  CS_ASSIGN_OR_RETURN(SqliteStmt s, db_->prepare(std::string("INSERT INTO processors (") + kProcessorColumns +
                                                 ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, "
                                                 "?14, ?15, ?16, ?17, ?18, ?19, ?20, '', ?21) ON CONFLICT(id) DO "
                                                 "UPDATE SET name = ?2, ram_bytes = ?3, free_disk_bytes = ?4, "
                                                 "cores = ?5, big_cores = ?6, arch = ?7, os = ?8, cpu_features = ?9, "
                                                 "prefill_tps = ?10, decode_tps = ?11, bench_shape = ?12, "
                                                 "price_per_day = ?13, attested = ?14, online = ?15, "
                                                 "registered_ms = CASE WHEN registered_ms != 0 THEN registered_ms "
                                                 "ELSE ?16 END, last_seen_ms = ?17, simulated = ?18, "
                                                 "attestation = ?20, address = ?21"));
  s.bind(1, p.id).bind(2, p.name).bind(3, p.specs.ram_bytes).bind(4, p.specs.free_disk_bytes);
  s.bind(5, p.specs.cores).bind(6, p.specs.big_cores).bind(7, p.specs.arch).bind(8, p.specs.os);
  s.bind(9, encode_string_list(p.specs.cpu_features)).bind(10, p.benchmark.prefill_tps);
  s.bind(11, p.benchmark.decode_tps).bind(12, p.benchmark.shape).bind(13, p.price_per_day);
  s.bind(14, p.attested).bind(15, p.online).bind(16, p.registered_ms).bind(17, p.last_seen_ms);
  s.bind(18, p.simulated).bind(19, enrollment_name(p.enrollment)).bind(20, p.attestation).bind(21, p.address);
  return s.run();
}

Result<std::optional<Processor>> SqliteStore::processor(const std::string& id) {
  std::lock_guard lock(mu_);
  CS_ASSIGN_OR_RETURN(SqliteStmt s, db_->prepare(select_from(kProcessorColumns, "FROM processors WHERE id = ?1")));
  s.bind(1, id);
  CS_ASSIGN_OR_RETURN(bool row, s.step());
  if (!row) return std::optional<Processor>();
  CS_ASSIGN_OR_RETURN(Processor p, read_processor(s));
  return std::optional<Processor>(std::move(p));
}

Result<std::vector<Processor>> SqliteStore::processors() {
  std::lock_guard lock(mu_);
  CS_ASSIGN_OR_RETURN(SqliteStmt s,
                      db_->prepare(select_from(kProcessorColumns, "FROM processors ORDER BY registered_ms, id")));
  return read_rows<Processor>(s, read_processor);
}

Status SqliteStore::set_processor_online(const std::string& id, bool online, int64_t now_ms) {
  std::lock_guard lock(mu_);
  CS_ASSIGN_OR_RETURN(SqliteStmt s, db_->prepare("UPDATE processors SET online = ?2, last_seen_ms = CASE WHEN ?2 "
                                                 "THEN ?3 ELSE last_seen_ms END WHERE id = ?1"));
  s.bind(1, id).bind(2, online).bind(3, now_ms);
  CS_RETURN_IF_ERROR(s.run());
  if (db_->changes() == 0) return Status::not_found("processor '" + id + "' not found");
  return {};
}

Status SqliteStore::touch_processors(const std::vector<std::string>& ids, int64_t now_ms) {
  if (ids.empty()) return {};
  std::lock_guard lock(mu_);
  SqliteTransaction tx(*db_);
  CS_RETURN_IF_ERROR(tx.begin());
  CS_ASSIGN_OR_RETURN(SqliteStmt s, db_->prepare("UPDATE processors SET online = 1, last_seen_ms = ?2 WHERE id = ?1"));
  for (const std::string& id : ids) {
    s.reset().bind(1, id).bind(2, now_ms);
    CS_RETURN_IF_ERROR(s.run());
  }
  return tx.commit();
}

Status SqliteStore::create_deployment(const Deployment& d) {
  const DeploymentSpec& spec = d.spec;
  if (spec.replicas < 0 || spec.spares < 0) {
    return Status::invalid_argument("deployment '" + spec.name + "': replicas and spares must be >= 0");
  }
  std::lock_guard lock(mu_);
  SqliteTransaction tx(*db_);
  CS_RETURN_IF_ERROR(tx.begin());
  {
    CS_ASSIGN_OR_RETURN(SqliteStmt exists, db_->prepare("SELECT 1 FROM deployments WHERE name = ?1"));
    exists.bind(1, spec.name);
    CS_ASSIGN_OR_RETURN(bool row, exists.step());
    if (row) return Status::invalid_argument("deployment '" + spec.name + "' exists");
  }
  CS_ASSIGN_OR_RETURN(SqliteStmt s, db_->prepare(std::string("INSERT INTO deployments (") + kDeploymentColumns +
                                                 ") VALUES (?1, ?2, ?3, ?4)"));
  s.bind(1, spec.name).bind(2, d.created_ms).bind(3, d.secrets_version).bind(4, deployment_spec_document(spec));
  CS_RETURN_IF_ERROR(s.run());
  for (int i = 0; i < spec.replicas + spec.spares; ++i) {
    Replica r;
    r.deployment = spec.name;
    r.index = i;
    r.serving = serving_of(spec);
    CS_RETURN_IF_ERROR(write_replica(r));
  }
  return tx.commit();
}

Result<std::optional<Deployment>> SqliteStore::deployment(const std::string& name) {
  std::lock_guard lock(mu_);
  CS_ASSIGN_OR_RETURN(SqliteStmt s, db_->prepare(select_from(kDeploymentColumns, "FROM deployments WHERE name = ?1")));
  s.bind(1, name);
  CS_ASSIGN_OR_RETURN(bool row, s.step());
  if (!row) return std::optional<Deployment>();
  CS_ASSIGN_OR_RETURN(Deployment d, read_deployment(s));
  return std::optional<Deployment>(std::move(d));
}

Result<std::vector<Deployment>> SqliteStore::deployments() {
  std::lock_guard lock(mu_);
  CS_ASSIGN_OR_RETURN(SqliteStmt s,
                      db_->prepare(select_from(kDeploymentColumns, "FROM deployments ORDER BY created_ms, name")));
  return read_rows<Deployment>(s, read_deployment);
}

Status SqliteStore::delete_deployment(const std::string& name, int64_t now_ms) {
  std::lock_guard lock(mu_);
  SqliteTransaction tx(*db_);
  CS_RETURN_IF_ERROR(tx.begin());
  CS_RETURN_IF_ERROR(end_service("deployment = ?2", name, now_ms));
  // Replica rows first: the cascade would do it, but this does not depend on foreign_keys.
  CS_ASSIGN_OR_RETURN(SqliteStmt rows, db_->prepare("DELETE FROM replicas WHERE deployment = ?1"));
  rows.bind(1, name);
  CS_RETURN_IF_ERROR(rows.run());
  CS_ASSIGN_OR_RETURN(SqliteStmt events, db_->prepare("DELETE FROM scaling_events WHERE deployment = ?1"));
  events.bind(1, name);
  CS_RETURN_IF_ERROR(events.run());
  CS_ASSIGN_OR_RETURN(SqliteStmt s, db_->prepare("DELETE FROM deployments WHERE name = ?1"));
  s.bind(1, name);
  CS_RETURN_IF_ERROR(s.run());
  if (db_->changes() == 0) return Status::not_found("deployment '" + name + "' not found");
  return tx.commit();
}

Result<std::vector<Replica>> SqliteStore::replicas(const std::string& deployment) {
  std::lock_guard lock(mu_);
  CS_ASSIGN_OR_RETURN(
      SqliteStmt s,
      db_->prepare("SELECT r.deployment, r.idx, r.processor_id, r.price_per_day, "
                   "r.state, r.progress, r.detail, r.prefill_tps, r.decode_tps, "
                   "r.matched_ms, r.ready_since_ms, r.cost, r.draining, r.reloading, r.serving, r.secrets_version "
                   "FROM replicas r JOIN deployments d ON d.name = r.deployment WHERE ?1 = '' OR "
                   "r.deployment = ?1 ORDER BY d.created_ms, d.name, r.idx"));
  s.bind(1, deployment);
  return read_rows<Replica>(s, read_replica);
}

Result<std::optional<Replica>> SqliteStore::load_replica(const std::string& deployment, int index) {
  CS_ASSIGN_OR_RETURN(SqliteStmt s,
                      db_->prepare(select_from(kReplicaColumns, "FROM replicas WHERE deployment = ?1 AND idx = ?2")));
  s.bind(1, deployment).bind(2, index);
  CS_ASSIGN_OR_RETURN(bool row, s.step());
  if (!row) return std::optional<Replica>();
  CS_ASSIGN_OR_RETURN(Replica r, read_replica(s));
  return std::optional<Replica>(std::move(r));
}

Status SqliteStore::write_replica(const Replica& r) {
  CS_ASSIGN_OR_RETURN(SqliteStmt s, db_->prepare(std::string("INSERT OR REPLACE INTO replicas (") + kReplicaColumns +
                                                 ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, "
                                                 "?14, ?15, ?16)"));
  s.bind(1, r.deployment).bind(2, r.index).bind(3, r.processor_id).bind(4, r.price_per_day);
  s.bind(5, replica_state_name(r.state)).bind(6, r.progress).bind(7, r.detail).bind(8, r.prefill_tps);
  s.bind(9, r.decode_tps).bind(10, r.matched_ms).bind(11, r.ready_since_ms).bind(12, r.cost).bind(13, r.draining);
  s.bind(14, r.reloading).bind(15, serving_document(r.serving)).bind(16, r.secrets_version);
  return s.run();
}

Status SqliteStore::update_replica(const Replica& r, int64_t now_ms) {
  std::lock_guard lock(mu_);
  SqliteTransaction tx(*db_);
  CS_RETURN_IF_ERROR(tx.begin());
  CS_ASSIGN_OR_RETURN(std::optional<Replica> prev, load_replica(r.deployment, r.index));
  if (!prev) {
    return Status::not_found("replica " + std::to_string(r.index) + " of deployment '" + r.deployment + "' not found");
  }
  Replica next = r;
  carry_cost(*prev, next, now_ms);
  CS_RETURN_IF_ERROR(write_replica(next));
  CS_RETURN_IF_ERROR(note_service(*prev, next, now_ms));
  return tx.commit();
}

// A row serves when it is Ready on a processor; it serves on as the same service while neither
// the processor nor the model changes.
Status SqliteStore::note_service(const Replica& prev, const Replica& next, int64_t now_ms) {
  if (now_ms <= 0) return {};
  const auto serving = [](const Replica& r) { return r.state == ReplicaState::Ready && !r.processor_id.empty(); };
  if (serving(prev) && serving(next) && prev.processor_id == next.processor_id &&
      prev.serving.model_sha256 == next.serving.model_sha256) {
    return {};
  }
  if (serving(prev)) {
    CS_ASSIGN_OR_RETURN(SqliteStmt s, db_->prepare("UPDATE service_history SET until_ms = ?3 WHERE deployment = ?1 "
                                                   "AND idx = ?2 AND until_ms = 0"));
    s.bind(1, prev.deployment).bind(2, prev.index).bind(3, now_ms);
    CS_RETURN_IF_ERROR(s.run());
  }
  if (!serving(next)) return {};
  CS_ASSIGN_OR_RETURN(SqliteStmt s, db_->prepare("INSERT INTO service_history (processor_id, deployment, idx, "
                                                 "model_sha256, from_ms, until_ms) VALUES (?1, ?2, ?3, ?4, ?5, 0)"));
  s.bind(1, next.processor_id).bind(2, next.deployment).bind(3, next.index).bind(4, next.serving.model_sha256);
  s.bind(5, now_ms);
  return s.run();
}

Status SqliteStore::end_service(const char* where, const std::string& key, int64_t now_ms) {
  if (now_ms <= 0) return {};
  CS_ASSIGN_OR_RETURN(SqliteStmt s, db_->prepare(std::string("UPDATE service_history SET until_ms = ?1 WHERE ") +
                                                 where + " AND until_ms = 0"));
  s.bind(1, now_ms).bind(2, key);
  return s.run();
}

Result<std::vector<ServiceInterval>> SqliteStore::service_history(const std::string& id, int64_t from_ms,
                                                                  int64_t until_ms, int limit) {
  std::lock_guard lock(mu_);
  CS_ASSIGN_OR_RETURN(SqliteStmt s,
                      db_->prepare("SELECT processor_id, deployment, idx, model_sha256, from_ms, until_ms FROM "
                                   "service_history WHERE processor_id = ?1 AND from_ms <= ?3 AND (until_ms = 0 OR "
                                   "until_ms >= ?2) ORDER BY from_ms DESC, rowid DESC LIMIT ?4"));
  s.bind(1, id).bind(2, from_ms).bind(3, until_ms).bind(4, limit);
  return read_rows<ServiceInterval>(s, [](const SqliteStmt& row) {
    ServiceInterval i;
    i.processor_id = row.text(0);
    i.deployment = row.text(1);
    i.index = static_cast<int>(row.i64(2));
    i.model_sha256 = row.text(3);
    i.from_ms = row.i64(4);
    i.until_ms = row.i64(5);
    return i;
  });
}

Status SqliteStore::scale_deployment(const std::string& name, std::optional<int> replicas, std::optional<int> spares,
                                     int64_t /*now_ms*/) {
  if (!replicas && !spares) return Status::invalid_argument("no count to scale: give replicas, spares or both");
  if ((replicas && *replicas < 1) || (spares && *spares < 0))
    return Status::invalid_argument("replicas must be >= 1 and spares >= 0");
  std::lock_guard lock(mu_);
  SqliteTransaction tx(*db_);
  CS_RETURN_IF_ERROR(tx.begin());
  CS_RETURN_IF_ERROR(scale_in_transaction(name, replicas, spares, std::nullopt).status());
  return tx.commit();
}

Result<bool> SqliteStore::rescale_replicas(const std::string& name, int from_replicas, int to_replicas,
                                           int64_t /*now_ms*/) {
  if (to_replicas < 1) return Status::invalid_argument("replicas must be >= 1");
  std::lock_guard lock(mu_);
  SqliteTransaction tx(*db_);
  CS_RETURN_IF_ERROR(tx.begin());
  CS_ASSIGN_OR_RETURN(const bool scaled, scale_in_transaction(name, to_replicas, std::nullopt, from_replicas));
  if (!scaled) return false;  // rolled back: nothing was written
  CS_RETURN_IF_ERROR(tx.commit());
  return true;
}

Result<bool> SqliteStore::scale_in_transaction(const std::string& name, std::optional<int> replicas,
                                               std::optional<int> spares, std::optional<int> expect_replicas) {
  Serving serving;  // new rows serve what the spec asks for now
  int old_total = 0;
  DeploymentSpec spec;
  {
    CS_ASSIGN_OR_RETURN(SqliteStmt s,
                        db_->prepare(select_from(kDeploymentColumns, "FROM deployments WHERE name = ?1")));
    s.bind(1, name);
    CS_ASSIGN_OR_RETURN(bool row, s.step());
    if (!row) return Status::not_found("deployment '" + name + "' not found");
    CS_ASSIGN_OR_RETURN(Deployment d, read_deployment(s));
    if (expect_replicas && d.spec.replicas != *expect_replicas) {
      return false;
    }
    old_total = d.spec.replicas + d.spec.spares;
    serving = serving_of(d.spec);
    spec = std::move(d.spec);
  }
  {
    if (replicas) spec.replicas = *replicas;
    if (spares) spec.spares = *spares;
    CS_ASSIGN_OR_RETURN(SqliteStmt s, db_->prepare("UPDATE deployments SET spec = ?2 WHERE name = ?1"));
    s.bind(1, name).bind(2, deployment_spec_document(spec));
    CS_RETURN_IF_ERROR(s.run());
  }
  const int total = spec.replicas + spec.spares;
  for (int i = 0; i < total; ++i) {
    CS_ASSIGN_OR_RETURN(std::optional<Replica> row, load_replica(name, i));
    if (!row) {
      Replica r;
      r.deployment = name;
      r.index = i;
      r.serving = serving;
      CS_RETURN_IF_ERROR(write_replica(r));
    } else if (i >= old_total && row->draining) {
      // Scaled down, then up again before the row was removed: it serves again. (A row drained
      // by hand, within the old total, stays drained.)
      row->draining = false;
      CS_RETURN_IF_ERROR(write_replica(*row));
    }
  }
  CS_ASSIGN_OR_RETURN(
      SqliteStmt s, db_->prepare("UPDATE replicas SET draining = 1 WHERE deployment = ?1 AND idx >= ?2 AND idx < ?3"));
  s.bind(1, name).bind(2, total).bind(3, kSurgeIndexBase);
  CS_RETURN_IF_ERROR(s.run());
  return true;
}

Status SqliteStore::update_deployment_spec(const DeploymentSpec& spec) {
  std::lock_guard lock(mu_);
  SqliteTransaction tx(*db_);
  CS_RETURN_IF_ERROR(tx.begin());
  DeploymentSpec next = spec;
  bool env_changed = false;
  {
    CS_ASSIGN_OR_RETURN(SqliteStmt s,
                        db_->prepare(select_from(kDeploymentColumns, "FROM deployments WHERE name = ?1")));
    s.bind(1, spec.name);
    CS_ASSIGN_OR_RETURN(bool row, s.step());
    if (!row) return Status::not_found("deployment '" + spec.name + "' not found");
    CS_ASSIGN_OR_RETURN(const Deployment stored, read_deployment(s));
    // The counts are scale_deployment's.
    next.replicas = stored.spec.replicas;
    next.spares = stored.spec.spares;
    env_changed = next.env != stored.spec.env;
  }
  CS_ASSIGN_OR_RETURN(SqliteStmt s, db_->prepare("UPDATE deployments SET spec = ?2, secrets_version = "
                                                 "secrets_version + ?3 WHERE name = ?1"));
  s.bind(1, spec.name).bind(2, deployment_spec_document(next)).bind(3, env_changed ? 1 : 0);
  CS_RETURN_IF_ERROR(s.run());
  return tx.commit();
}

Status SqliteStore::set_enrollment(const std::string& id, Enrollment e, const std::optional<std::string>& label,
                                   int64_t now_ms) {
  std::lock_guard lock(mu_);
  SqliteTransaction tx(*db_);
  CS_RETURN_IF_ERROR(tx.begin());
  if (label && !label->empty()) {
    CS_ASSIGN_OR_RETURN(SqliteStmt taken, db_->prepare("SELECT id FROM processors WHERE label = ?1 AND id != ?2"));
    taken.bind(1, *label).bind(2, id);
    CS_ASSIGN_OR_RETURN(bool row, taken.step());
    if (row) return Status::invalid_argument("the name '" + *label + "' is taken by device " + taken.text(0));
  }
  // A device never seen gets a row of its own, so an operator can approve (or revoke) a key
  // before the device first joins.
  CS_ASSIGN_OR_RETURN(SqliteStmt s, db_->prepare(std::string("INSERT INTO processors (") + kProcessorColumns +
                                                 ") VALUES (?1, substr(?1, 1, 12), 0, 0, 0, 0, '', '', '[]', 0, 0, '', "
                                                 "0, 0, 0, ?4, ?4, 0, ?2, '', coalesce(?3, ''), '') ON CONFLICT(id) DO "
                                                 "UPDATE SET enrollment = ?2, label = coalesce(?3, label)"));
  s.bind(1, id).bind(2, enrollment_name(e));
  if (label) s.bind(3, *label);
  s.bind(4, now_ms);
  CS_RETURN_IF_ERROR(s.run());
  // A device no longer enrolled serves nothing from now on, whatever its rows say until the
  // reconcile loop moves them.
  if (e != Enrollment::Enrolled) CS_RETURN_IF_ERROR(end_service("processor_id = ?2", id, now_ms));
  return tx.commit();
}

Result<int> SqliteStore::remove_pending_processors(int64_t seen_before_ms) {
  std::lock_guard lock(mu_);
  CS_ASSIGN_OR_RETURN(SqliteStmt s, db_->prepare("DELETE FROM processors WHERE enrollment = 'pending' AND "
                                                 "last_seen_ms < ?1 AND online = 0 AND id NOT IN (SELECT processor_id "
                                                 "FROM replicas)"));
  s.bind(1, seen_before_ms);
  CS_RETURN_IF_ERROR(s.run());
  return db_->changes();
}

Status SqliteStore::add_enrollment_token(const EnrollmentToken& t) {
  std::lock_guard lock(mu_);
  CS_ASSIGN_OR_RETURN(SqliteStmt s, db_->prepare("INSERT INTO enrollment_tokens (hash, label, uses_left, expires_ms, "
                                                 "created_ms) VALUES (?1, ?2, ?3, ?4, ?5)"));
  s.bind(1, t.hash).bind(2, t.label).bind(3, t.uses_left).bind(4, t.expires_ms).bind(5, t.created_ms);
  return s.run();
}

Result<bool> SqliteStore::redeem_enrollment_token(const std::string& hash, int64_t now_ms) {
  std::lock_guard lock(mu_);
  // One statement: two devices presenting the last use at once cannot both get it.
  CS_ASSIGN_OR_RETURN(SqliteStmt s, db_->prepare("UPDATE enrollment_tokens SET uses_left = uses_left - 1 WHERE "
                                                 "hash = ?1 AND uses_left > 0 AND expires_ms > ?2"));
  s.bind(1, hash).bind(2, now_ms);
  CS_RETURN_IF_ERROR(s.run());
  return db_->changes() == 1;
}

Result<std::vector<EnrollmentToken>> SqliteStore::enrollment_tokens() {
  std::lock_guard lock(mu_);
  CS_ASSIGN_OR_RETURN(SqliteStmt s, db_->prepare("SELECT hash, label, uses_left, expires_ms, created_ms FROM "
                                                 "enrollment_tokens ORDER BY created_ms, hash"));
  return read_rows<EnrollmentToken>(s, [](const SqliteStmt& row) {
    return EnrollmentToken{row.text(0), row.text(1), row.i32(2), row.i64(3), row.i64(4)};
  });
}

Status SqliteStore::withdraw_enrollment_token(const std::string& id) {
  if (id.size() != 12 || id.find_first_not_of("0123456789abcdef") != std::string::npos) {
    return Status::not_found("no enrollment token '" + id.substr(0, 40) + "'");
  }
  std::lock_guard lock(mu_);
  CS_ASSIGN_OR_RETURN(SqliteStmt s, db_->prepare("UPDATE enrollment_tokens SET uses_left = 0 WHERE substr(hash, 1, 12) "
                                                 "= ?1 AND (SELECT count(*) FROM enrollment_tokens WHERE "
                                                 "substr(hash, 1, 12) = ?1) = 1"));
  s.bind(1, id);
  CS_RETURN_IF_ERROR(s.run());
  if (db_->changes() != 1) return Status::not_found("no enrollment token '" + id + "'");
  return {};
}

Status SqliteStore::add_api_key(const ApiKey& k) {
  std::lock_guard lock(mu_);
  {
    CS_ASSIGN_OR_RETURN(SqliteStmt exists, db_->prepare("SELECT 1 FROM api_keys WHERE id = ?1 OR hash = ?2"));
    exists.bind(1, k.id).bind(2, k.hash);
    CS_ASSIGN_OR_RETURN(bool row, exists.step());
    if (row) return Status::invalid_argument("api key " + k.id + " exists");
  }
  CS_ASSIGN_OR_RETURN(SqliteStmt s,
                      db_->prepare("INSERT INTO api_keys (id, hash, name, deployment, rpm, tokens_per_day, "
                                   "created_ms, revoked, requests, tokens, day, day_tokens, deployment_created_ms) "
                                   "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)"));
  s.bind(1, k.id).bind(2, k.hash).bind(3, k.name).bind(4, k.deployment).bind(5, k.rpm).bind(6, k.tokens_per_day);
  s.bind(7, k.created_ms).bind(8, k.revoked).bind(9, k.requests).bind(10, k.tokens).bind(11, k.day);
  s.bind(12, k.day_tokens).bind(13, k.deployment_created_ms);
  return s.run();
}

Status SqliteStore::update_api_key(const ApiKey& k) {
  std::lock_guard lock(mu_);
  CS_ASSIGN_OR_RETURN(SqliteStmt s,
                      db_->prepare("UPDATE api_keys SET revoked = revoked OR ?2, deployment_created_ms = ?3 WHERE "
                                   "id = ?1"));
  s.bind(1, k.id).bind(2, k.revoked).bind(3, k.deployment_created_ms);
  CS_RETURN_IF_ERROR(s.run());
  if (db_->changes() == 0) return Status::not_found("no api key " + k.id);
  return {};
}

Result<std::vector<ApiKey>> SqliteStore::api_keys() {
  std::lock_guard lock(mu_);
  CS_ASSIGN_OR_RETURN(SqliteStmt s,
                      db_->prepare("SELECT id, hash, name, deployment, rpm, tokens_per_day, created_ms, "
                                   "revoked, requests, tokens, day, day_tokens, deployment_created_ms FROM "
                                   "api_keys ORDER BY "
                                   "created_ms, id"));
  return read_rows<ApiKey>(s, [](const SqliteStmt& row) {
    ApiKey k;
    k.id = row.text(0);
    k.hash = row.text(1);
    k.name = row.text(2);
    k.deployment = row.text(3);
    k.rpm = row.i32(4);
    k.tokens_per_day = row.i64(5);
    k.created_ms = row.i64(6);
    k.revoked = row.i64(7) != 0;
    k.requests = row.i64(8);
    k.tokens = row.i64(9);
    k.day = row.i64(10);
    k.day_tokens = row.i64(11);
    k.deployment_created_ms = row.i64(12);
    return k;
  });
}

Status SqliteStore::add_replica(const Replica& r) {
  std::lock_guard lock(mu_);
  SqliteTransaction tx(*db_);
  CS_RETURN_IF_ERROR(tx.begin());
  {
    CS_ASSIGN_OR_RETURN(SqliteStmt s, db_->prepare("SELECT 1 FROM deployments WHERE name = ?1"));
    s.bind(1, r.deployment);
    CS_ASSIGN_OR_RETURN(bool row, s.step());
    if (!row) return Status::not_found("deployment '" + r.deployment + "' not found");
  }
  CS_ASSIGN_OR_RETURN(std::optional<Replica> prev, load_replica(r.deployment, r.index));
  if (prev) return Status::invalid_argument("replica " + std::to_string(r.index) + " of '" + r.deployment + "' exists");
  Replica row = r;
  row.cost = 0;
  row.ready_since_ms = 0;
  CS_RETURN_IF_ERROR(write_replica(row));
  return tx.commit();
}

Status SqliteStore::remove_replica(const std::string& deployment, int index, int64_t now_ms) {
  std::lock_guard lock(mu_);
  SqliteTransaction tx(*db_);
  CS_RETURN_IF_ERROR(tx.begin());
  CS_ASSIGN_OR_RETURN(std::optional<Replica> prev, load_replica(deployment, index));
  if (!prev) return Status::not_found("replica " + std::to_string(index) + " of '" + deployment + "' not found");
  CS_ASSIGN_OR_RETURN(SqliteStmt s, db_->prepare("DELETE FROM replicas WHERE deployment = ?1 AND idx = ?2"));
  s.bind(1, deployment).bind(2, index);
  CS_RETURN_IF_ERROR(s.run());
  // The row and its accrued cost go with it, as with delete_deployment; its service ends.
  Replica gone = *prev;
  gone.state = ReplicaState::Unmatched;
  CS_RETURN_IF_ERROR(note_service(*prev, gone, now_ms));
  return tx.commit();
}

Status SqliteStore::mark_processor_offline(const std::string& id, int64_t now_ms) {
  std::lock_guard lock(mu_);
  SqliteTransaction tx(*db_);
  CS_RETURN_IF_ERROR(tx.begin());
  {
    CS_ASSIGN_OR_RETURN(SqliteStmt s, db_->prepare("UPDATE processors SET online = 0 WHERE id = ?1"));
    s.bind(1, id);
    CS_RETURN_IF_ERROR(s.run());
    if (db_->changes() == 0) return Status::not_found("processor '" + id + "' not found");
  }
  std::vector<Replica> held;
  {
    CS_ASSIGN_OR_RETURN(SqliteStmt s, db_->prepare(select_from(kReplicaColumns,
                                                               "FROM replicas WHERE processor_id = ?1 AND state != "
                                                               "'offline' ORDER BY deployment, idx")));
    s.bind(1, id);
    CS_ASSIGN_OR_RETURN(held, read_rows<Replica>(s, read_replica));
  }
  for (const Replica& prev : held) {
    Replica next = prev;
    next.state = ReplicaState::Offline;
    next.detail = "processor went offline";
    next.secrets_version = 0;  // a device that comes back opens them again
    carry_cost(prev, next, now_ms);
    CS_RETURN_IF_ERROR(write_replica(next));
    CS_RETURN_IF_ERROR(note_service(prev, next, now_ms));
  }
  return tx.commit();
}

}  // namespace

namespace {

constexpr const char* kPinColumns =
    "processor_id, key_sha256, key_spki, challenge, verified_boot_key, boot_state, app_packages, app_digests, "
    "evidence, pinned_ms, held, change_approved, ecdh";

Result<AttestationPin> read_pin(const SqliteStmt& s) {
  AttestationPin p;
  p.processor_id = s.text(0);
  p.key_sha256 = s.text(1);
  p.key_spki = s.text(2);
  p.challenge = s.text(3);
  p.verified_boot_key = s.text(4);
  p.boot_state = s.text(5);
  CS_ASSIGN_OR_RETURN(p.app_packages, decode_string_list(s.text(6), "attestation_pins.app_packages"));
  CS_ASSIGN_OR_RETURN(p.app_digests, decode_string_list(s.text(7), "attestation_pins.app_digests"));
  p.evidence = s.text(8);
  p.pinned_ms = s.i64(9);
  p.held = s.text(10);
  p.change_approved = s.i64(11) != 0;
  p.ecdh = s.i64(12) != 0;
  return p;
}

}  // namespace

Result<std::optional<AttestationPin>> SqliteStore::attestation_pin(const std::string& id) {
  std::lock_guard lock(mu_);
  CS_ASSIGN_OR_RETURN(SqliteStmt s,
                      db_->prepare(select_from(kPinColumns, "FROM attestation_pins WHERE processor_id = ?1")));
  s.bind(1, id);
  CS_ASSIGN_OR_RETURN(bool row, s.step());
  if (!row) return std::optional<AttestationPin>();
  CS_ASSIGN_OR_RETURN(AttestationPin p, read_pin(s));
  return std::optional<AttestationPin>(std::move(p));
}

Result<std::vector<AttestationPin>> SqliteStore::attestation_pins() {
  std::lock_guard lock(mu_);
  CS_ASSIGN_OR_RETURN(SqliteStmt s,
                      db_->prepare(select_from(kPinColumns, "FROM attestation_pins ORDER BY processor_id")));
  return read_rows<AttestationPin>(s, read_pin);
}

Status SqliteStore::put_attestation_pin(const AttestationPin& p) {
  std::lock_guard lock(mu_);
  CS_ASSIGN_OR_RETURN(SqliteStmt s,
                      db_->prepare(std::string("INSERT OR REPLACE INTO attestation_pins (") + kPinColumns +
                                   ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)"));
  s.bind(1, p.processor_id).bind(2, p.key_sha256).bind(3, p.key_spki).bind(4, p.challenge);
  s.bind(5, p.verified_boot_key).bind(6, p.boot_state).bind(7, encode_string_list(p.app_packages));
  s.bind(8, encode_string_list(p.app_digests)).bind(9, p.evidence).bind(10, p.pinned_ms).bind(11, p.held);
  s.bind(12, p.change_approved).bind(13, p.ecdh);
  return s.run();
}

Result<std::unique_ptr<Store>> open_sqlite_store(const std::string& path) {
  CS_ASSIGN_OR_RETURN(std::unique_ptr<SqliteDb> db, SqliteDb::open(path));
  // The first statements read the header: a file that is not a database fails here (DataLoss).
  CS_RETURN_IF_ERROR(db->exec("PRAGMA busy_timeout = 5000"));
  CS_RETURN_IF_ERROR(db->exec("PRAGMA journal_mode = WAL"));
  CS_RETURN_IF_ERROR(db->exec("PRAGMA foreign_keys = ON"));
  // Overwritten and deleted rows are zeroed, not left in free pages (a value sealed at rest
  // must not survive beside its plain predecessor).
  CS_RETURN_IF_ERROR(db->exec("PRAGMA secure_delete = ON"));
  auto store = std::make_unique<SqliteStore>(std::move(db));
  CS_RETURN_IF_ERROR(store->migrate());
  return std::unique_ptr<Store>(std::move(store));
}

Status SqliteStore::save_agreement(const DeviceAgreement& a) {
  std::lock_guard lock(mu_);
  CS_ASSIGN_OR_RETURN(SqliteStmt s, db_->prepare("INSERT OR REPLACE INTO device_agreement (processor_id, checks, "
                                                 "agreed, lost, recent_bits, recent_count, quarantined, reason, "
                                                 "changed_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"));
  s.bind(1, a.processor_id).bind(2, a.checks).bind(3, a.agreed).bind(4, a.lost).bind(5, a.recent_bits);
  s.bind(6, a.recent_count).bind(7, a.quarantined).bind(8, a.reason).bind(9, a.changed_ms);
  return s.run();
}

Result<std::vector<DeviceAgreement>> SqliteStore::agreements() {
  std::lock_guard lock(mu_);
  CS_ASSIGN_OR_RETURN(SqliteStmt s, db_->prepare("SELECT processor_id, checks, agreed, lost, recent_bits, "
                                                 "recent_count, quarantined, reason, changed_ms FROM "
                                                 "device_agreement ORDER BY processor_id"));
  return read_rows<DeviceAgreement>(s, [](const SqliteStmt& row) {
    DeviceAgreement a;
    a.processor_id = row.text(0);
    a.checks = row.i64(1);
    a.agreed = row.i64(2);
    a.lost = row.i64(3);
    a.recent_bits = row.i64(4);
    a.recent_count = row.i32(5);
    a.quarantined = row.i64(6) != 0;
    a.reason = row.text(7);
    a.changed_ms = row.i64(8);
    return a;
  });
}

Status SqliteStore::set_canaries(const CanarySet& c) {
  std::lock_guard lock(mu_);
  {
    CS_ASSIGN_OR_RETURN(SqliteStmt s, db_->prepare("SELECT 1 FROM deployments WHERE name = ?1"));
    s.bind(1, c.deployment);
    CS_ASSIGN_OR_RETURN(bool row, s.step());
    if (!row) return Status::not_found("deployment '" + c.deployment + "' not found");
  }
  if (c.cases.empty()) {
    CS_ASSIGN_OR_RETURN(SqliteStmt s, db_->prepare("DELETE FROM canaries WHERE deployment = ?1"));
    s.bind(1, c.deployment);
    return s.run();
  }
  CS_ASSIGN_OR_RETURN(SqliteStmt s, db_->prepare("INSERT OR REPLACE INTO canaries (deployment, cases, every) "
                                                 "VALUES (?1, ?2, ?3)"));
  s.bind(1, c.deployment).bind(2, c.cases).bind(3, c.every);
  return s.run();
}

Result<std::vector<CanarySet>> SqliteStore::canaries() {
  std::lock_guard lock(mu_);
  CS_ASSIGN_OR_RETURN(SqliteStmt s, db_->prepare("SELECT deployment, cases, every FROM canaries ORDER BY deployment"));
  return read_rows<CanarySet>(s, [](const SqliteStmt& row) { return CanarySet{row.text(0), row.text(1), row.i32(2)}; });
}

}  // namespace cellserve::fleet
