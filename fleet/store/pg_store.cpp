// PgStore: the Store on one PostgreSQL connection behind one mutex (several hubs each hold their
// own). The SQL follows sqlite_store.cpp statement for statement; where SQLite's BEGIN IMMEDIATE
// serializes writers of one file, here a transaction locks the rows it reads to rewrite (SELECT
// ... FOR UPDATE), and an insert that must not replace uses ON CONFLICT DO NOTHING, so that hubs
// sharing the database keep the same guarantees.
#include "fleet/store/pg_store.h"

#include <mutex>

#include "fleet/spec/deployment_spec.h"
#include "fleet/store/list_codec.h"
#include "fleet/store/pg_cluster_store.h"
#include "fleet/store/pg_connection.h"
#include "fleet/store/pg_quota_store.h"
#include "fleet/store/pg_scaling_event_log.h"
#include "fleet/store/pg_schema.h"
#include "fleet/store/replica_cost.h"

namespace cellserve::fleet {
namespace {

constexpr const char* kPgProcessorColumns =
    "id, name, ram_bytes, free_disk_bytes, cores, big_cores, arch, os, cpu_features, prefill_tps, decode_tps, "
    "bench_shape, price_per_day, attested, online, registered_ms, last_seen_ms, simulated, enrollment, attestation, "
    "label, address";
constexpr const char* kPgDeploymentColumns = "name, created_ms, secrets_version, spec";
constexpr const char* kPgReplicaColumns =
    "deployment, idx, processor_id, price_per_day, state, progress, detail, prefill_tps, decode_tps, matched_ms, "
    "ready_since_ms, cost, draining, reloading, serving, secrets_version";
constexpr const char* kPgPinColumns =
    "processor_id, key_sha256, key_spki, challenge, verified_boot_key, boot_state, app_packages, app_digests, "
    "evidence, pinned_ms, held, change_approved, ecdh";

std::string pg_select_from(const char* columns, const char* rest) {
  return std::string("SELECT ") + columns + " " + rest;
}

Result<Processor> read_pg_processor(const PgRow& s) {
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
  p.attested = s.flag(13);
  p.online = s.flag(14);
  p.registered_ms = s.i64(15);
  p.last_seen_ms = s.i64(16);
  p.simulated = s.flag(17);
  const std::string enrollment = s.text(18);
  const std::optional<Enrollment> e = parse_enrollment(enrollment);
  if (!e) return Status::data_loss("stored enrollment '" + enrollment + "' is unknown");
  p.enrollment = *e;
  p.attestation = s.text(19);
  p.label = s.text(20);
  p.address = s.text(21);
  return p;
}

Result<Deployment> read_pg_deployment(const PgRow& s) {
  Deployment d;
  const std::string name = s.text(0);
  d.created_ms = s.i64(1);
  d.secrets_version = s.i64(2);
  CS_ASSIGN_OR_RETURN(d.spec, read_deployment_spec_document(s.text(3)));
  if (d.spec.name != name) return Status::data_loss("stored deployment '" + name + "': its spec names another");
  return d;
}

Result<Replica> read_pg_replica(const PgRow& s) {
  Replica r;
  r.deployment = s.text(0);
  r.index = s.i32(1);
  r.processor_id = s.text(2);
  r.price_per_day = s.f64(3);
  const std::string state = s.text(4);
  const std::optional<ReplicaState> parsed = parse_replica_state(state);
  if (!parsed) return Status::data_loss("stored replica state '" + state + "' is unknown");
  r.state = *parsed;
  r.progress = s.f64(5);
  r.detail = s.text(6);
  r.prefill_tps = s.f64(7);
  r.decode_tps = s.f64(8);
  r.matched_ms = s.i64(9);
  r.ready_since_ms = s.i64(10);
  r.cost = s.f64(11);
  r.draining = s.flag(12);
  r.reloading = s.flag(13);
  CS_ASSIGN_OR_RETURN(r.serving, read_serving_document(s.text(14)));
  r.secrets_version = s.i64(15);
  return r;
}

Result<AttestationPin> read_pg_pin(const PgRow& s) {
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
  p.change_approved = s.flag(11);
  p.ecdh = s.flag(12);
  return p;
}

ApiKey read_pg_api_key(const PgRow& row) {
  ApiKey k;
  k.id = row.text(0);
  k.hash = row.text(1);
  k.name = row.text(2);
  k.deployment = row.text(3);
  k.rpm = row.i32(4);
  k.tokens_per_day = row.i64(5);
  k.created_ms = row.i64(6);
  k.revoked = row.flag(7);
  k.requests = row.i64(8);
  k.tokens = row.i64(9);
  k.day = row.i64(10);
  k.day_tokens = row.i64(11);
  k.deployment_created_ms = row.i64(12);
  return k;
}

DeviceAgreement read_pg_agreement(const PgRow& row) {
  DeviceAgreement a;
  a.processor_id = row.text(0);
  a.checks = row.i64(1);
  a.agreed = row.i64(2);
  a.lost = row.i64(3);
  a.recent_bits = row.i64(4);
  a.recent_count = row.i32(5);
  a.quarantined = row.flag(6);
  a.reason = row.text(7);
  a.changed_ms = row.i64(8);
  return a;
}

ServiceInterval read_pg_interval(const PgRow& row) {
  ServiceInterval i;
  i.processor_id = row.text(0);
  i.deployment = row.text(1);
  i.index = row.i32(2);
  i.model_sha256 = row.text(3);
  i.from_ms = row.i64(4);
  i.until_ms = row.i64(5);
  return i;
}

class PgStore final : public Store {
 public:
  explicit PgStore(std::unique_ptr<PgConnection> conn) : conn_(std::move(conn)) {}

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
  // Each REQUIRES mu_ held. load_* lock the row they read until the transaction ends.
  Result<std::optional<Replica>> load_replica(const std::string& deployment, int index);
  Result<std::optional<Deployment>> load_deployment_for_update(const std::string& name);
  Result<bool> deployment_exists(const std::string& name);
  Status write_replica(const Replica& r);
  // scale_deployment's work inside the caller's transaction; a count not given keeps the stored one.
  // False, writing nothing, when `expect_replicas` is given and is not the stored replica count.
  Result<bool> scale_in_transaction(const std::string& name, std::optional<int> replicas, std::optional<int> spares,
                                    std::optional<int> expect_replicas);
  // Keeps service_history as row `prev` becomes `next` at now_ms (store.h, service_history).
  Status note_service(const Replica& prev, const Replica& next, int64_t now_ms);
  // Closes at now_ms the open intervals `where` selects (an SQL condition on $2, bound to `key`).
  Status end_service(const char* where, const std::string& key, int64_t now_ms);

  std::mutex mu_;
  std::unique_ptr<PgConnection> conn_;   // guarded by mu_
  PgClusterStore cluster_{mu_, *conn_};  // after mu_ and the connection it uses
  PgQuotaStore quotas_{mu_, *conn_};
  PgScalingEventLog scaling_events_{mu_, *conn_};
};

Status PgStore::migrate() {
  std::lock_guard lock(mu_);
  return migrate_pg_schema(*conn_, pg_hub_schema_migrations());
}

Status PgStore::upsert_processor(const Processor& p) {
  std::lock_guard lock(mu_);
  // registered_ms: the first non-zero value sticks. enrollment and label: written when the row is
  // created, then only by set_enrollment (a registration never writes them back).
  PgParams v;
  v.add(p.id).add(p.name).add(p.specs.ram_bytes).add(p.specs.free_disk_bytes).add(p.specs.cores);
  v.add(p.specs.big_cores).add(p.specs.arch).add(p.specs.os).add(encode_string_list(p.specs.cpu_features));
  v.add(p.benchmark.prefill_tps).add(p.benchmark.decode_tps).add(p.benchmark.shape).add(p.price_per_day);
  v.add(p.attested).add(p.online).add(p.registered_ms).add(p.last_seen_ms).add(p.simulated);
  v.add(enrollment_name(p.enrollment)).add(p.attestation).add(p.address);
  return conn_
      ->exec(std::string("INSERT INTO processors (") + kPgProcessorColumns +
                 ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, "
                 "$20, '', $21) ON CONFLICT (id) DO UPDATE SET name = $2, ram_bytes = $3, free_disk_bytes = $4, "
                 "cores = $5, big_cores = $6, arch = $7, os = $8, cpu_features = $9, prefill_tps = $10, "
                 "decode_tps = $11, bench_shape = $12, price_per_day = $13, attested = $14, online = $15, "
                 "registered_ms = CASE WHEN processors.registered_ms != 0 THEN processors.registered_ms ELSE $16 "
                 "END, last_seen_ms = $17, simulated = $18, attestation = $20, address = $21",
             v)
      .status();
}

Result<std::optional<Processor>> PgStore::processor(const std::string& id) {
  std::lock_guard lock(mu_);
  CS_ASSIGN_OR_RETURN(
      const PgResult r,
      conn_->exec(pg_select_from(kPgProcessorColumns, "FROM processors WHERE id = $1"), PgParams().add(id)));
  if (r.rows() == 0) return std::optional<Processor>();
  CS_ASSIGN_OR_RETURN(Processor p, read_pg_processor(r.row(0)));
  return std::optional<Processor>(std::move(p));
}

Result<std::vector<Processor>> PgStore::processors() {
  std::lock_guard lock(mu_);
  CS_ASSIGN_OR_RETURN(const PgResult r,
                      conn_->exec(pg_select_from(kPgProcessorColumns, "FROM processors ORDER BY registered_ms, id")));
  return read_pg_rows<Processor>(r, read_pg_processor);
}

Status PgStore::set_processor_online(const std::string& id, bool online, int64_t now_ms) {
  std::lock_guard lock(mu_);
  CS_ASSIGN_OR_RETURN(const PgResult r, conn_->exec("UPDATE processors SET online = $2, last_seen_ms = CASE WHEN $2 "
                                                    "THEN $3 ELSE last_seen_ms END WHERE id = $1",
                                                    PgParams().add(id).add(online).add(now_ms)));
  if (r.changed() == 0) return Status::not_found("processor '" + id + "' not found");
  return {};
}

Status PgStore::touch_processors(const std::vector<std::string>& ids, int64_t now_ms) {
  if (ids.empty()) return {};
  std::lock_guard lock(mu_);
  return conn_
      ->exec("UPDATE processors SET online = true, last_seen_ms = $2 WHERE id = ANY($1::text[])",
             PgParams().add_text_array(ids).add(now_ms))
      .status();
}

Status PgStore::create_deployment(const Deployment& d) {
  const DeploymentSpec& spec = d.spec;
  if (spec.replicas < 0 || spec.spares < 0) {
    return Status::invalid_argument("deployment '" + spec.name + "': replicas and spares must be >= 0");
  }
  std::lock_guard lock(mu_);
  PgTransaction tx(*conn_);
  CS_RETURN_IF_ERROR(tx.begin());
  // ON CONFLICT: a name another hub takes at the same moment is "exists" too, not a key violation.
  CS_ASSIGN_OR_RETURN(
      const PgResult inserted,
      conn_->exec(
          std::string("INSERT INTO deployments (") + kPgDeploymentColumns +
              ") VALUES ($1, $2, $3, $4) ON CONFLICT (name) DO NOTHING",
          PgParams().add(spec.name).add(d.created_ms).add(d.secrets_version).add(deployment_spec_document(spec))));
  if (inserted.changed() == 0) return Status::invalid_argument("deployment '" + spec.name + "' exists");
  for (int i = 0; i < spec.replicas + spec.spares; ++i) {
    Replica r;
    r.deployment = spec.name;
    r.index = i;
    r.serving = serving_of(spec);
    CS_RETURN_IF_ERROR(write_replica(r));
  }
  return tx.commit();
}

Result<std::optional<Deployment>> PgStore::deployment(const std::string& name) {
  std::lock_guard lock(mu_);
  CS_ASSIGN_OR_RETURN(
      const PgResult r,
      conn_->exec(pg_select_from(kPgDeploymentColumns, "FROM deployments WHERE name = $1"), PgParams().add(name)));
  if (r.rows() == 0) return std::optional<Deployment>();
  CS_ASSIGN_OR_RETURN(Deployment d, read_pg_deployment(r.row(0)));
  return std::optional<Deployment>(std::move(d));
}

Result<std::vector<Deployment>> PgStore::deployments() {
  std::lock_guard lock(mu_);
  CS_ASSIGN_OR_RETURN(const PgResult r,
                      conn_->exec(pg_select_from(kPgDeploymentColumns, "FROM deployments ORDER BY created_ms, name")));
  return read_pg_rows<Deployment>(r, read_pg_deployment);
}

Status PgStore::delete_deployment(const std::string& name, int64_t now_ms) {
  std::lock_guard lock(mu_);
  PgTransaction tx(*conn_);
  CS_RETURN_IF_ERROR(tx.begin());
  CS_RETURN_IF_ERROR(end_service("deployment = $2", name, now_ms));
  CS_RETURN_IF_ERROR(conn_->exec("DELETE FROM replicas WHERE deployment = $1", PgParams().add(name)).status());
  CS_RETURN_IF_ERROR(conn_->exec("DELETE FROM scaling_events WHERE deployment = $1", PgParams().add(name)).status());
  CS_ASSIGN_OR_RETURN(const PgResult r, conn_->exec("DELETE FROM deployments WHERE name = $1", PgParams().add(name)));
  if (r.changed() == 0) return Status::not_found("deployment '" + name + "' not found");
  return tx.commit();
}

Result<std::vector<Replica>> PgStore::replicas(const std::string& deployment) {
  std::lock_guard lock(mu_);
  CS_ASSIGN_OR_RETURN(
      const PgResult r,
      conn_->exec("SELECT r.deployment, r.idx, r.processor_id, r.price_per_day, r.state, r.progress, r.detail, "
                  "r.prefill_tps, r.decode_tps, r.matched_ms, r.ready_since_ms, r.cost, r.draining, r.reloading, "
                  "r.serving, r.secrets_version FROM replicas r JOIN deployments d ON d.name = r.deployment WHERE "
                  "$1 = '' OR r.deployment = $1 ORDER BY d.created_ms, d.name, r.idx",
                  PgParams().add(deployment)));
  return read_pg_rows<Replica>(r, read_pg_replica);
}

Result<std::optional<Replica>> PgStore::load_replica(const std::string& deployment, int index) {
  CS_ASSIGN_OR_RETURN(const PgResult r, conn_->exec(pg_select_from(kPgReplicaColumns,
                                                                   "FROM replicas WHERE deployment = $1 AND idx = $2 "
                                                                   "FOR UPDATE"),
                                                    PgParams().add(deployment).add(index)));
  if (r.rows() == 0) return std::optional<Replica>();
  CS_ASSIGN_OR_RETURN(Replica row, read_pg_replica(r.row(0)));
  return std::optional<Replica>(std::move(row));
}

Result<std::optional<Deployment>> PgStore::load_deployment_for_update(const std::string& name) {
  CS_ASSIGN_OR_RETURN(const PgResult r,
                      conn_->exec(pg_select_from(kPgDeploymentColumns, "FROM deployments WHERE name = $1 FOR UPDATE"),
                                  PgParams().add(name)));
  if (r.rows() == 0) return std::optional<Deployment>();
  CS_ASSIGN_OR_RETURN(Deployment d, read_pg_deployment(r.row(0)));
  return std::optional<Deployment>(std::move(d));
}

Result<bool> PgStore::deployment_exists(const std::string& name) {
  CS_ASSIGN_OR_RETURN(const PgResult r, conn_->exec("SELECT 1 FROM deployments WHERE name = $1", PgParams().add(name)));
  return r.rows() > 0;
}

Status PgStore::write_replica(const Replica& r) {
  PgParams v;
  v.add(r.deployment).add(r.index).add(r.processor_id).add(r.price_per_day).add(replica_state_name(r.state));
  v.add(r.progress).add(r.detail).add(r.prefill_tps).add(r.decode_tps).add(r.matched_ms).add(r.ready_since_ms);
  v.add(r.cost).add(r.draining).add(r.reloading).add(serving_document(r.serving)).add(r.secrets_version);
  return conn_
      ->exec(std::string("INSERT INTO replicas (") + kPgReplicaColumns +
                 ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16) ON CONFLICT "
                 "(deployment, idx) DO UPDATE SET processor_id = $3, price_per_day = $4, state = $5, progress = $6, "
                 "detail = $7, prefill_tps = $8, decode_tps = $9, matched_ms = $10, ready_since_ms = $11, cost = $12, "
                 "draining = $13, reloading = $14, serving = $15, secrets_version = $16",
             v)
      .status();
}

Status PgStore::update_replica(const Replica& r, int64_t now_ms) {
  std::lock_guard lock(mu_);
  PgTransaction tx(*conn_);
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
Status PgStore::note_service(const Replica& prev, const Replica& next, int64_t now_ms) {
  if (now_ms <= 0) return {};
  const auto serving = [](const Replica& r) { return r.state == ReplicaState::Ready && !r.processor_id.empty(); };
  if (serving(prev) && serving(next) && prev.processor_id == next.processor_id &&
      prev.serving.model_sha256 == next.serving.model_sha256) {
    return {};
  }
  if (serving(prev)) {
    CS_RETURN_IF_ERROR(conn_
                           ->exec("UPDATE service_history SET until_ms = $3 WHERE deployment = $1 AND idx = $2 AND "
                                  "until_ms = 0",
                                  PgParams().add(prev.deployment).add(prev.index).add(now_ms))
                           .status());
  }
  if (!serving(next)) return {};
  return conn_
      ->exec(
          "INSERT INTO service_history (processor_id, deployment, idx, model_sha256, from_ms, until_ms) VALUES "
          "($1, $2, $3, $4, $5, 0)",
          PgParams()
              .add(next.processor_id)
              .add(next.deployment)
              .add(next.index)
              .add(next.serving.model_sha256)
              .add(now_ms))
      .status();
}

Status PgStore::end_service(const char* where, const std::string& key, int64_t now_ms) {
  if (now_ms <= 0) return {};
  return conn_
      ->exec(std::string("UPDATE service_history SET until_ms = $1 WHERE ") + where + " AND until_ms = 0",
             PgParams().add(now_ms).add(key))
      .status();
}

Result<std::vector<ServiceInterval>> PgStore::service_history(const std::string& id, int64_t from_ms, int64_t until_ms,
                                                              int limit) {
  std::lock_guard lock(mu_);
  PgParams v;
  v.add(id).add(from_ms).add(until_ms);
  if (limit < 0) {
    v.add_null();  // SQLite's LIMIT -1: no limit
  } else {
    v.add(limit);
  }
  CS_ASSIGN_OR_RETURN(const PgResult r,
                      conn_->exec("SELECT processor_id, deployment, idx, model_sha256, from_ms, until_ms FROM "
                                  "service_history WHERE processor_id = $1 AND from_ms <= $3 AND (until_ms = 0 OR "
                                  "until_ms >= $2) ORDER BY from_ms DESC, seq DESC LIMIT $4",
                                  v));
  return read_pg_rows<ServiceInterval>(r, read_pg_interval);
}

Status PgStore::scale_deployment(const std::string& name, std::optional<int> replicas, std::optional<int> spares,
                                 int64_t /*now_ms*/) {
  if (!replicas && !spares) return Status::invalid_argument("no count to scale: give replicas, spares or both");
  if ((replicas && *replicas < 1) || (spares && *spares < 0))
    return Status::invalid_argument("replicas must be >= 1 and spares >= 0");
  std::lock_guard lock(mu_);
  PgTransaction tx(*conn_);
  CS_RETURN_IF_ERROR(tx.begin());
  CS_RETURN_IF_ERROR(scale_in_transaction(name, replicas, spares, std::nullopt).status());
  return tx.commit();
}

Result<bool> PgStore::rescale_replicas(const std::string& name, int from_replicas, int to_replicas,
                                       int64_t /*now_ms*/) {
  if (to_replicas < 1) return Status::invalid_argument("replicas must be >= 1");
  std::lock_guard lock(mu_);
  PgTransaction tx(*conn_);
  CS_RETURN_IF_ERROR(tx.begin());
  CS_ASSIGN_OR_RETURN(const bool scaled, scale_in_transaction(name, to_replicas, std::nullopt, from_replicas));
  if (!scaled) return false;  // rolled back: nothing was written
  CS_RETURN_IF_ERROR(tx.commit());
  return true;
}

Result<bool> PgStore::scale_in_transaction(const std::string& name, std::optional<int> replicas,
                                           std::optional<int> spares, std::optional<int> expect_replicas) {
  // The deployment's row stays locked until COMMIT: a hub scaling it at once waits, then sees this.
  CS_ASSIGN_OR_RETURN(std::optional<Deployment> d, load_deployment_for_update(name));
  if (!d) return Status::not_found("deployment '" + name + "' not found");
  if (expect_replicas && d->spec.replicas != *expect_replicas) {
    return false;
  }
  const int old_total = d->spec.replicas + d->spec.spares;
  const Serving serving = serving_of(d->spec);  // new rows serve what the spec asks for now
  if (replicas) d->spec.replicas = *replicas;
  if (spares) d->spec.spares = *spares;
  CS_RETURN_IF_ERROR(conn_
                         ->exec("UPDATE deployments SET spec = $2 WHERE name = $1",
                                PgParams().add(name).add(deployment_spec_document(d->spec)))
                         .status());
  const int total = d->spec.replicas + d->spec.spares;
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
  CS_RETURN_IF_ERROR(conn_
                         ->exec("UPDATE replicas SET draining = true WHERE deployment = $1 AND idx >= $2 AND idx < $3",
                                PgParams().add(name).add(total).add(kSurgeIndexBase))
                         .status());
  return true;
}

Status PgStore::update_deployment_spec(const DeploymentSpec& spec) {
  std::lock_guard lock(mu_);
  PgTransaction tx(*conn_);
  CS_RETURN_IF_ERROR(tx.begin());
  CS_ASSIGN_OR_RETURN(const std::optional<Deployment> stored, load_deployment_for_update(spec.name));
  if (!stored) return Status::not_found("deployment '" + spec.name + "' not found");
  DeploymentSpec next = spec;
  // The counts are scale_deployment's.
  next.replicas = stored->spec.replicas;
  next.spares = stored->spec.spares;
  const bool env_changed = next.env != stored->spec.env;
  CS_RETURN_IF_ERROR(conn_
                         ->exec("UPDATE deployments SET spec = $2, secrets_version = secrets_version + $3 WHERE name "
                                "= $1",
                                PgParams().add(spec.name).add(deployment_spec_document(next)).add(env_changed ? 1 : 0))
                         .status());
  return tx.commit();
}

Status PgStore::set_enrollment(const std::string& id, Enrollment e, const std::optional<std::string>& label,
                               int64_t now_ms) {
  std::lock_guard lock(mu_);
  PgTransaction tx(*conn_);
  CS_RETURN_IF_ERROR(tx.begin());
  if (label && !label->empty()) {
    CS_ASSIGN_OR_RETURN(const PgResult taken, conn_->exec("SELECT id FROM processors WHERE label = $1 AND id != $2",
                                                          PgParams().add(*label).add(id)));
    if (taken.rows() > 0) {
      return Status::invalid_argument("the name '" + *label + "' is taken by device " + taken.row(0).text(0));
    }
  }
  // A device never seen gets a row of its own, so an operator can approve (or revoke) a key
  // before the device first joins.
  PgParams v;
  v.add(id).add(enrollment_name(e));
  if (label) {
    v.add(*label);
  } else {
    v.add_null();
  }
  v.add(now_ms);
  CS_RETURN_IF_ERROR(conn_
                         ->exec(std::string("INSERT INTO processors (") + kPgProcessorColumns +
                                    ") VALUES ($1, substr($1, 1, 12), 0, 0, 0, 0, '', '', '[]', 0, 0, '', 0, false, "
                                    "false, $4, $4, false, $2, '', coalesce($3, ''), '') ON CONFLICT (id) DO UPDATE "
                                    "SET enrollment = $2, label = coalesce($3, processors.label)",
                                v)
                         .status());
  // A device no longer enrolled serves nothing from now on, whatever its rows say until the
  // reconcile loop moves them.
  if (e != Enrollment::Enrolled) CS_RETURN_IF_ERROR(end_service("processor_id = $2", id, now_ms));
  return tx.commit();
}

Result<int> PgStore::remove_pending_processors(int64_t seen_before_ms) {
  std::lock_guard lock(mu_);
  CS_ASSIGN_OR_RETURN(const PgResult r,
                      conn_->exec("DELETE FROM processors WHERE enrollment = 'pending' AND last_seen_ms < $1 AND NOT "
                                  "online AND id NOT IN (SELECT processor_id FROM replicas)",
                                  PgParams().add(seen_before_ms)));
  return static_cast<int>(r.changed());
}

Status PgStore::add_enrollment_token(const EnrollmentToken& t) {
  std::lock_guard lock(mu_);
  return conn_
      ->exec(
          "INSERT INTO enrollment_tokens (hash, label, uses_left, expires_ms, created_ms) VALUES ($1, $2, $3, $4, "
          "$5)",
          PgParams().add(t.hash).add(t.label).add(t.uses_left).add(t.expires_ms).add(t.created_ms))
      .status();
}

Result<bool> PgStore::redeem_enrollment_token(const std::string& hash, int64_t now_ms) {
  std::lock_guard lock(mu_);
  // One statement: the row lock makes two hubs presenting the last use at once take turns, and
  // the second finds none left.
  CS_ASSIGN_OR_RETURN(const PgResult r,
                      conn_->exec("UPDATE enrollment_tokens SET uses_left = uses_left - 1 WHERE "
                                  "hash = $1 AND uses_left > 0 AND expires_ms > $2 RETURNING uses_left",
                                  PgParams().add(hash).add(now_ms)));
  return r.rows() == 1;
}

Result<std::vector<EnrollmentToken>> PgStore::enrollment_tokens() {
  std::lock_guard lock(mu_);
  CS_ASSIGN_OR_RETURN(const PgResult r, conn_->exec("SELECT hash, label, uses_left, expires_ms, created_ms FROM "
                                                    "enrollment_tokens ORDER BY created_ms, hash"));
  return read_pg_rows<EnrollmentToken>(r, [](const PgRow& row) {
    return EnrollmentToken{row.text(0), row.text(1), row.i32(2), row.i64(3), row.i64(4)};
  });
}

Status PgStore::withdraw_enrollment_token(const std::string& id) {
  if (id.size() != 12 || id.find_first_not_of("0123456789abcdef") != std::string::npos) {
    return Status::not_found("no enrollment token '" + id.substr(0, 40) + "'");
  }
  std::lock_guard lock(mu_);
  CS_ASSIGN_OR_RETURN(const PgResult r,
                      conn_->exec("UPDATE enrollment_tokens SET uses_left = 0 WHERE substr(hash, 1, 12) = $1 AND "
                                  "(SELECT count(*) FROM enrollment_tokens WHERE substr(hash, 1, 12) = $1) = 1",
                                  PgParams().add(id)));
  if (r.changed() != 1) return Status::not_found("no enrollment token '" + id + "'");
  return {};
}

Status PgStore::add_api_key(const ApiKey& k) {
  std::lock_guard lock(mu_);
  PgParams v;
  v.add(k.id).add(k.hash).add(k.name).add(k.deployment).add(k.rpm).add(k.tokens_per_day).add(k.created_ms);
  v.add(k.revoked).add(k.requests).add(k.tokens).add(k.day).add(k.day_tokens).add(k.deployment_created_ms);
  // No target: a taken id or hash both leave the table as it was.
  CS_ASSIGN_OR_RETURN(const PgResult r,
                      conn_->exec("INSERT INTO api_keys (id, hash, name, deployment, rpm, tokens_per_day, created_ms, "
                                  "revoked, requests, tokens, day, day_tokens, deployment_created_ms) VALUES ($1, $2, "
                                  "$3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) ON CONFLICT DO NOTHING",
                                  v));
  if (r.changed() == 0) return Status::invalid_argument("api key " + k.id + " exists");
  return {};
}

Status PgStore::update_api_key(const ApiKey& k) {
  std::lock_guard lock(mu_);
  CS_ASSIGN_OR_RETURN(const PgResult r,
                      conn_->exec("UPDATE api_keys SET revoked = revoked OR $2, deployment_created_ms = $3 WHERE "
                                  "id = $1",
                                  PgParams().add(k.id).add(k.revoked).add(k.deployment_created_ms)));
  if (r.changed() == 0) return Status::not_found("no api key " + k.id);
  return {};
}

Result<std::vector<ApiKey>> PgStore::api_keys() {
  std::lock_guard lock(mu_);
  CS_ASSIGN_OR_RETURN(const PgResult r,
                      conn_->exec("SELECT id, hash, name, deployment, rpm, tokens_per_day, created_ms, revoked, "
                                  "requests, tokens, day, day_tokens, deployment_created_ms FROM api_keys ORDER BY "
                                  "created_ms, id"));
  return read_pg_rows<ApiKey>(r, read_pg_api_key);
}

Status PgStore::add_replica(const Replica& r) {
  std::lock_guard lock(mu_);
  PgTransaction tx(*conn_);
  CS_RETURN_IF_ERROR(tx.begin());
  CS_ASSIGN_OR_RETURN(const bool exists, deployment_exists(r.deployment));
  if (!exists) return Status::not_found("deployment '" + r.deployment + "' not found");
  CS_ASSIGN_OR_RETURN(std::optional<Replica> prev, load_replica(r.deployment, r.index));
  if (prev) return Status::invalid_argument("replica " + std::to_string(r.index) + " of '" + r.deployment + "' exists");
  Replica row = r;
  row.cost = 0;
  row.ready_since_ms = 0;
  CS_RETURN_IF_ERROR(write_replica(row));
  return tx.commit();
}

Status PgStore::remove_replica(const std::string& deployment, int index, int64_t now_ms) {
  std::lock_guard lock(mu_);
  PgTransaction tx(*conn_);
  CS_RETURN_IF_ERROR(tx.begin());
  CS_ASSIGN_OR_RETURN(std::optional<Replica> prev, load_replica(deployment, index));
  if (!prev) return Status::not_found("replica " + std::to_string(index) + " of '" + deployment + "' not found");
  CS_RETURN_IF_ERROR(
      conn_->exec("DELETE FROM replicas WHERE deployment = $1 AND idx = $2", PgParams().add(deployment).add(index))
          .status());
  // The row and its accrued cost go with it, as with delete_deployment; its service ends.
  Replica gone = *prev;
  gone.state = ReplicaState::Unmatched;
  CS_RETURN_IF_ERROR(note_service(*prev, gone, now_ms));
  return tx.commit();
}

Status PgStore::mark_processor_offline(const std::string& id, int64_t now_ms) {
  std::lock_guard lock(mu_);
  PgTransaction tx(*conn_);
  CS_RETURN_IF_ERROR(tx.begin());
  CS_ASSIGN_OR_RETURN(const PgResult updated,
                      conn_->exec("UPDATE processors SET online = false WHERE id = $1", PgParams().add(id)));
  if (updated.changed() == 0) return Status::not_found("processor '" + id + "' not found");
  CS_ASSIGN_OR_RETURN(const PgResult rows,
                      conn_->exec(pg_select_from(kPgReplicaColumns,
                                                 "FROM replicas WHERE processor_id = $1 AND state != "
                                                 "'offline' ORDER BY deployment, idx FOR UPDATE"),
                                  PgParams().add(id)));
  CS_ASSIGN_OR_RETURN(const std::vector<Replica> held, read_pg_rows<Replica>(rows, read_pg_replica));
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

Result<std::optional<AttestationPin>> PgStore::attestation_pin(const std::string& id) {
  std::lock_guard lock(mu_);
  CS_ASSIGN_OR_RETURN(const PgResult r, conn_->exec(pg_select_from(kPgPinColumns,
                                                                   "FROM attestation_pins WHERE "
                                                                   "processor_id = $1"),
                                                    PgParams().add(id)));
  if (r.rows() == 0) return std::optional<AttestationPin>();
  CS_ASSIGN_OR_RETURN(AttestationPin p, read_pg_pin(r.row(0)));
  return std::optional<AttestationPin>(std::move(p));
}

Result<std::vector<AttestationPin>> PgStore::attestation_pins() {
  std::lock_guard lock(mu_);
  CS_ASSIGN_OR_RETURN(const PgResult r,
                      conn_->exec(pg_select_from(kPgPinColumns, "FROM attestation_pins ORDER BY processor_id")));
  return read_pg_rows<AttestationPin>(r, read_pg_pin);
}

Status PgStore::put_attestation_pin(const AttestationPin& p) {
  std::lock_guard lock(mu_);
  PgParams v;
  v.add(p.processor_id).add(p.key_sha256).add(p.key_spki).add(p.challenge).add(p.verified_boot_key);
  v.add(p.boot_state).add(encode_string_list(p.app_packages)).add(encode_string_list(p.app_digests));
  v.add(p.evidence).add(p.pinned_ms).add(p.held).add(p.change_approved).add(p.ecdh);
  return conn_
      ->exec(std::string("INSERT INTO attestation_pins (") + kPgPinColumns +
                 ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) ON CONFLICT (processor_id) DO "
                 "UPDATE SET key_sha256 = $2, key_spki = $3, challenge = $4, verified_boot_key = $5, boot_state = $6, "
                 "app_packages = $7, app_digests = $8, evidence = $9, pinned_ms = $10, held = $11, "
                 "change_approved = $12, ecdh = $13",
             v)
      .status();
}

Status PgStore::save_agreement(const DeviceAgreement& a) {
  std::lock_guard lock(mu_);
  PgParams v;
  v.add(a.processor_id).add(a.checks).add(a.agreed).add(a.lost).add(a.recent_bits).add(a.recent_count);
  v.add(a.quarantined).add(a.reason).add(a.changed_ms);
  return conn_
      ->exec(
          "INSERT INTO device_agreement (processor_id, checks, agreed, lost, recent_bits, recent_count, "
          "quarantined, reason, changed_ms) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT "
          "(processor_id) DO UPDATE SET checks = $2, agreed = $3, lost = $4, recent_bits = $5, recent_count = $6, "
          "quarantined = $7, reason = $8, changed_ms = $9",
          v)
      .status();
}

Result<std::vector<DeviceAgreement>> PgStore::agreements() {
  std::lock_guard lock(mu_);
  CS_ASSIGN_OR_RETURN(const PgResult r,
                      conn_->exec("SELECT processor_id, checks, agreed, lost, recent_bits, recent_count, quarantined, "
                                  "reason, changed_ms FROM device_agreement ORDER BY processor_id"));
  return read_pg_rows<DeviceAgreement>(r, read_pg_agreement);
}

Status PgStore::set_canaries(const CanarySet& c) {
  std::lock_guard lock(mu_);
  CS_ASSIGN_OR_RETURN(const bool exists, deployment_exists(c.deployment));
  if (!exists) return Status::not_found("deployment '" + c.deployment + "' not found");
  if (c.cases.empty()) {
    return conn_->exec("DELETE FROM canaries WHERE deployment = $1", PgParams().add(c.deployment)).status();
  }
  return conn_
      ->exec(
          "INSERT INTO canaries (deployment, cases, every) VALUES ($1, $2, $3) ON CONFLICT (deployment) DO UPDATE "
          "SET cases = $2, every = $3",
          PgParams().add(c.deployment).add(c.cases).add(c.every))
      .status();
}

Result<std::vector<CanarySet>> PgStore::canaries() {
  std::lock_guard lock(mu_);
  CS_ASSIGN_OR_RETURN(const PgResult r,
                      conn_->exec("SELECT deployment, cases, every FROM canaries ORDER BY deployment"));
  return read_pg_rows<CanarySet>(r, [](const PgRow& row) { return CanarySet{row.text(0), row.text(1), row.i32(2)}; });
}

}  // namespace

Result<std::unique_ptr<Store>> open_postgres_store(const std::string& url) {
  CS_ASSIGN_OR_RETURN(std::unique_ptr<PgConnection> conn, PgConnection::open(url));
  auto store = std::make_unique<PgStore>(std::move(conn));
  CS_RETURN_IF_ERROR(store->migrate());
  return std::unique_ptr<Store>(std::move(store));
}

}  // namespace cellserve::fleet
