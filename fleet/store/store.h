// Store: where the hub keeps processors, deployments and replicas, so that a restart loses
// nothing. SQLite is the embedded implementation (open_sqlite_store); PostgreSQL the shared one
// (pg_store.h); open_store.h picks one by URL or path.
//
// Thread safety: a Store is safe for concurrent use from several threads without external
// synchronization (implementations serialize internally).
// Times are Unix milliseconds passed in by the caller; a Store never reads the clock, except
// cluster(), timed by the database's clock (cluster_store.h).
// Errors: a backend failure is Internal with the backend's message; a file that is not a
// database is DataLoss naming the path; a database that cannot be reached now (PostgreSQL: down,
// connection lost, timed out) is Unavailable, and a later call may succeed.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "fleet/store/cluster_store.h"
#include "fleet/store/quota_store.h"
#include "fleet/store/records.h"
#include "fleet/store/scaling_event_log.h"

namespace cellserve::fleet {

class Store {
 public:
  virtual ~Store() = default;

  // Inserts `p`, or replaces every field of the processor with the same id except registered_ms,
  // which keeps its stored value once set (non-zero), and enrollment and label, which only
  // set_enrollment changes once the row exists (a registration never writes them back).
  virtual Status upsert_processor(const Processor& p) = 0;
  // Returns the processor with `id`, or nullopt when there is none.
  virtual Result<std::optional<Processor>> processor(const std::string& id) = 0;
  // Returns every processor ordered by registered_ms, then id.
  virtual Result<std::vector<Processor>> processors() = 0;
  // Sets the online flag; when `online`, also sets last_seen_ms = now_ms. NotFound when absent.
  virtual Status set_processor_online(const std::string& id, bool online, int64_t now_ms) = 0;
  // Sets online and last_seen_ms = now_ms on every processor of `ids` in one write: the agents
  // that answered a hub's status polls since its last round. Ids without a row are skipped.
  virtual Status touch_processors(const std::vector<std::string>& ids, int64_t now_ms) = 0;

  // Stores `d` and creates its replicas + spares replica rows (indices 0..replicas+spares-1,
  // Unmatched) in the same transaction. InvalidArgument "deployment 'x' exists" when the name is
  // taken.
  virtual Status create_deployment(const Deployment& d) = 0;
  // Returns the deployment named `name`, or nullopt.
  virtual Result<std::optional<Deployment>> deployment(const std::string& name) = 0;
  // Returns every deployment ordered by created_ms, then name.
  virtual Result<std::vector<Deployment>> deployments() = 0;
  // Removes the deployment and its replica rows. NotFound when absent.
  virtual Status delete_deployment(const std::string& name, int64_t now_ms) = 0;
  // Sets the deployment's replica and spare counts, in one transaction: rows for new indexes are
  // created Unmatched (or, when still there from a scale-down, serve again), and rows past the
  // new total (below kSurgeIndexBase) are marked draining (the hub removes them once idle,
  // remove_replica). New rows serve the deployment's spec as it is now. A count not given stays as
  // stored at the moment of the write (a spares-only change never undoes a replica count another
  // hub's autoscaler wrote after the caller looked). NotFound when absent; InvalidArgument for a
  // count below 1 (replicas) or 0 (spares), or neither given.
  virtual Status scale_deployment(const std::string& name, std::optional<int> replicas, std::optional<int> spares,
                                  int64_t now_ms) = 0;
  // The autoscaler's change of the replica count: as scale_deployment with the stored spares, in
  // one transaction, and only while the count is still `from_replicas`: false (nothing written)
  // when another hub or the operator changed it meanwhile (their change stands).
  virtual Result<bool> rescale_replicas(const std::string& name, int from_replicas, int to_replicas,
                                        int64_t now_ms) = 0;
  // Replaces every field of the deployment named spec.name except its replica and spare counts
  // (scale_deployment) and created_ms. Replica rows keep their own serving (a rolling update
  // moves them to the new one). Raises the deployment's secrets_version when spec.env differs
  // from the stored one (sealed values compare as stored: an unchanged secret keeps its sealed
  // form). NotFound when absent.
  virtual Status update_deployment_spec(const DeploymentSpec& spec) = 0;
  // Sets the processor's enrolment, and its label when `label` is given (AlreadyExists when
  // another processor has that label). A processor never seen gets a row (name: the id's first
  // 12 hex digits, offline, registered and last seen at now_ms). Any enrolment but Enrolled ends
  // its service intervals at now_ms, in the same transaction (service_history).
  virtual Status set_enrollment(const std::string& id, Enrollment e, const std::optional<std::string>& label,
                                int64_t now_ms) = 0;
  // Removes the pending processors last seen before `seen_before_ms` that are offline and named
  // by no replica row; returns how many.
  virtual Result<int> remove_pending_processors(int64_t seen_before_ms) = 0;
  // Stores an enrolment token (by its hash).
  virtual Status add_enrollment_token(const EnrollmentToken& t) = 0;
  // Spends one use of the token with `hash`: true when it existed, had a use left and had not
  // expired at now_ms (atomically: concurrent redeemers never share the last use).
  virtual Result<bool> redeem_enrollment_token(const std::string& hash, int64_t now_ms) = 0;
  // Every stored token, oldest first.
  virtual Result<std::vector<EnrollmentToken>> enrollment_tokens() = 0;
  // Spends every remaining use of the one token whose hash starts with `id` (12 hex digits, as
  // listed). NotFound when no token, or more than one, matches.
  virtual Status withdraw_enrollment_token(const std::string& id) = 0;
  // Stores a new API key with the usage given (InvalidArgument when its id exists); writes one's
  // revocation (never undone: a hub that has not seen another's revocation cannot revive the key)
  // and deployment_created_ms, leaving its usage alone, which only quotas() counts (NotFound when
  // absent); and lists them all, oldest first.
  virtual Status add_api_key(const ApiKey& k) = 0;
  virtual Status update_api_key(const ApiKey& k) = 0;
  virtual Result<std::vector<ApiKey>> api_keys() = 0;
  // Stores (replacing) one device's agreement record, and lists them all.
  virtual Status save_agreement(const DeviceAgreement& a) = 0;
  virtual Result<std::vector<DeviceAgreement>> agreements() = 0;
  // Stores (replacing) a deployment's canaries; an empty `cases` removes them. NotFound when the
  // deployment is absent. They go with the deployment when it is deleted.
  virtual Status set_canaries(const CanarySet& c) = 0;
  virtual Result<std::vector<CanarySet>> canaries() = 0;
  // Inserts row `r` as given, with no accrued cost and no open interval (a rolling update's surge
  // row). NotFound when the deployment is absent; InvalidArgument when the row exists.
  virtual Status add_replica(const Replica& r) = 0;
  // Removes one replica row, closing its served interval. NotFound when absent.
  virtual Status remove_replica(const std::string& deployment, int index, int64_t now_ms) = 0;

  // Returns the replica rows of `deployment` ordered by index; "" returns the rows of all
  // deployments ordered by deployment created_ms, name, index.
  virtual Result<std::vector<Replica>> replicas(const std::string& deployment) = 0;
  // Replaces the row (deployment, index) with `r`; NotFound when there is no such row.
  // The caller never computes cost: the stored cost and ready_since_ms are kept, except that a
  // transition into Ready opens a served interval (ready_since_ms = now_ms) and a transition
  // out of Ready closes it (cost += price × served time, ready_since_ms = 0). A change of
  // processor_id or price_per_day while Ready closes the interval at the old price and opens a
  // new one (so a promotion bills each row correctly). The fields r.cost and r.ready_since_ms are
  // ignored. A "now_ms" of 0 opens no interval: times are positive Unix milliseconds.
  virtual Status update_replica(const Replica& r, int64_t now_ms) = 0;
  // Marks the processor offline and each of its replica rows Offline (closing open cost
  // intervals at now_ms), in one transaction. NotFound when the processor is absent.
  virtual Status mark_processor_offline(const std::string& id, int64_t now_ms) = 0;
  // The service intervals of processor `id` that overlap [from_ms, until_ms] (an open one
  // reaches into the future), newest first, at most `limit`. Every replica write above keeps them:
  // a row turning Ready (with now_ms > 0) opens one for its processor and serving model; leaving
  // Ready, a change of processor or model, removing the row or its deployment, the processor
  // going offline, or its enrolment ending closes it.
  virtual Result<std::vector<ServiceInterval>> service_history(const std::string& id, int64_t from_ms, int64_t until_ms,
                                                               int limit) = 0;
  // The attested key processor `id` is pinned to, or nullopt (records.h, AttestationPin).
  virtual Result<std::optional<AttestationPin>> attestation_pin(const std::string& id) = 0;
  // Every pin, by processor id.
  virtual Result<std::vector<AttestationPin>> attestation_pins() = 0;
  // Inserts `pin`, or replaces every field of the pin of pin.processor_id.
  virtual Status put_attestation_pin(const AttestationPin& pin) = 0;
  // Returns r.cost plus the open interval (price_per_day × (now_ms - ready_since_ms) / 1 day)
  // when r is Ready with ready_since_ms set. Pure: reads nothing from the store.
  virtual double replica_cost(const Replica& r, int64_t now_ms) const = 0;

  // What the hubs sharing this database record about each other (cluster_store.h). The same
  // connection and lock as the rest of the store; lives as long as the Store.
  virtual ClusterStore& cluster() = 0;
  // Each API key's quotas, counted in the database (quota_store.h). The same connection and lock.
  virtual QuotaStore& quotas() = 0;
  // Each deployment's autoscaling decisions (scaling_event_log.h). The same connection and lock.
  virtual ScalingEventLog& scaling_events() = 0;
};

// Opens (creating when absent) the SQLite database at `path`, creates or migrates the schema
// (PRAGMA user_version) and turns on WAL mode, a busy timeout and foreign keys. DataLoss when
// the file is not a database, Internal on other SQLite failures. The Store owns the connection.
Result<std::unique_ptr<Store>> open_sqlite_store(const std::string& path);

}  // namespace cellserve::fleet
