// A deployment's OpenAI Files and Batches API (/d/<deployment>/v1/files, /v1/batches; batch_api.cpp)
// and the batch runner that works the batches on the deployment's idle capacity
// (batch_runner.cpp). It owns the batch store (batch.db, or the hubs' PostgreSQL database) and
// the files' bytes (DATA_DIR/batch/files, or chunk rows in that database); lines reach the
// replicas through the ReplicaForwarder. docs/batch.md describes the whole.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "fleet/batch/batch_file_store.h"
#include "fleet/batch/batch_store.h"
#include "fleet/hub/batch_workers.h"
#include "fleet/hub/hub_state.h"
#include "fleet/hub/replica_forwarder.h"
#include "net/route_table.h"

namespace cellserve::fleet {

class BatchService {
 public:
  // `holder`: the id this hub's leases of batch lines carry in the batch store; "": the one kept
  // in DATA_DIR/batch/hub_id (made at the first open). Several hubs sharing a PostgreSQL store
  // need distinct ids; a hub that keeps its id across restarts gets its own leases back at once
  // rather than after they expire. (The cluster's hub id, once HubState has one, belongs here.)
  BatchService(HubState& state, ReplicaForwarder& forwarder, std::string holder = "");

  // Opens the batch store: the PostgreSQL database of `store_url` when it is one (the hub's own
  // store, shared by several hubs), else DATA_DIR/batch.db; and the files' folder. Lines that
  // were running when this hub stopped run again (on SQLite every leased line: the hub owns the
  // file; on PostgreSQL this holder's, the others' leases expire); records stored before they
  // named their deployment's creation are bound to it.
  Status open(const std::string& data_dir, const std::string& store_url = "");
  // The id this hub's leases carry.
  const std::string& holder() const { return holder_; }
  // Each Files and Batches route (before the Gateway's, whose /d/ paths would take them).
  void add_routes(net::RouteTable& routes);
  // Starts the runner's thread; stop() lets no new line begin, join() waits for the thread once
  // the lines in flight have ended (their tunnels closed).
  void start();
  void stop() { workers_.stop(); }
  void join();

  // Whether the HTTP server spools this request's body to disk: an upload to /d/<dep>/v1/files
  // by a caller that route admits.
  bool spools_upload(const net::HttpRequest& head) const;
  // The local folder uploads are spooled to (and, without PostgreSQL, the files kept in).
  const std::string& files_dir() const { return files_->scratch_dir(); }
  // Every batch in progress, of every deployment (the autoscaler sizes deployments to them).
  Result<std::vector<Batch>> batches_in_progress() { return store_->batches_in({BatchStatus::InProgress}); }
  // The deployment `name` was deleted: its files and batches go with it. Returns how many files.
  size_t forget_deployment(const std::string& name);

  // Batch uploads: the largest file a client may upload (OpenAI's limit is 200 MB).
  static constexpr uint64_t kMaxFileBytes = 256ull << 20;
  // How long this hub's lease of a line lasts unless renewed: the runner renews its leases every
  // round (250 ms), so only a hub that died or stalled this long loses its lines to the others.
  static constexpr int64_t kLineLeaseMs = 2 * 60 * 1000;
  // How long a claim to finalize a batch lasts: another hub takes a dead finalizer's over.
  static constexpr int64_t kFinalizeClaimMs = 2 * 60 * 1000;

  // One round of the runner: validates new batches, leases lines to free replicas, finalizes
  // what is done (the runner's thread calls it every 250 ms or when woken).
  void round();
  // Waits for the lines in flight to end (tests drive round() themselves).
  void join_lines() { workers_.join_all(); }

 private:
  // What a caller of the deployment's Files and Batches API sees: the deployment as created now,
  // and of its files and batches only those of the caller's API key ("": the admin, all).
  BatchStore::Scope scope(const std::string& deployment, const std::string& key_id);
  std::optional<BatchFile> deployment_file(const BatchStore::Scope& scope, const std::string& id);
  std::optional<Batch> deployment_batch(const BatchStore::Scope& scope, const std::string& id);
  // One admitted call of the API: the request, the caller's scope, the path's {id} ("" : none).
  struct Call {
    const net::HttpRequest& req;
    BatchStore::Scope scope;
    std::string id;
  };
  using Handler = void (BatchService::*)(const Call&, net::ResponseWriter&);
  void upload_file(const Call& call, net::ResponseWriter& w);
  void list_files(const Call& call, net::ResponseWriter& w);
  void show_file(const Call& call, net::ResponseWriter& w);
  void file_content(const Call& call, net::ResponseWriter& w);
  void delete_file(const Call& call, net::ResponseWriter& w);
  void create_batch(const Call& call, net::ResponseWriter& w);
  void list_batches(const Call& call, net::ResponseWriter& w);
  void show_batch(const Call& call, net::ResponseWriter& w);
  void batch_throughput(const Call& call, net::ResponseWriter& w);
  void cancel_batch(const Call& call, net::ResponseWriter& w);
  // Removes a file's record and bytes (deleted by its owner, expired, or its deployment deleted).
  void remove_file(const std::string& id);

  void loop();
  void validate_batch(Batch& b, int64_t now);
  void dispatch_lines(const Batch& b);
  void run_line(const Batch& b, const DeploymentView& dep, const BatchLine& l, Reservation r);
  // Records how line `l` ended (its result line); a line whose end cannot be stored is released.
  void end_line(const Batch& b, const BatchLine& l, LineState state, const std::string& result,
                const std::string& device);
  void finalize_batch(Batch& b, BatchStatus terminal, int64_t now);
  // A line whose end and release could not be stored (the store was unreachable) would stay
  // leased, and renewed, for as long as this hub lives: its release is retried every round.
  void strand(const BatchLine& l);
  void release_stranded();
  // This hub's lease terms for lines, from now.
  LeaseTerms line_lease() const;
  // Whether this hub may finalize `b` now (batch_store.h: claim_finalization).
  bool claim_finalization(const Batch& b);
  // An in-progress batch whose lines all ended is finalized (true: nothing to dispatch).
  bool complete_when_done(Batch& b, int64_t now);
  // A cancelled or expired batch: its lines that never ran fail with `code`, then it is finalized
  // `terminal`, once no line is in flight anywhere.
  void end_unrun_lines(Batch& b, BatchStatus terminal, const std::string& code, const std::string& message,
                       int64_t now);

  HubState& state_;
  ReplicaForwarder& forwarder_;
  std::string holder_;  // set before open() returns
  std::unique_ptr<BatchStore> store_;
  bool shared_store_ = false;              // PostgreSQL: other hubs lease from the same store
  std::unique_ptr<BatchFileStore> files_;  // DATA_DIR/batch/files, or chunk rows on PostgreSQL
  BatchWorkers workers_;
  std::mutex stranded_mu_;
  std::vector<BatchLine> stranded_;  // guarded by stranded_mu_
  std::thread thread_;
};

}  // namespace cellserve::fleet
