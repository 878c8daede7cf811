#include "fleet/hub/batch_service.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "fleet/batch/open_batch_store.h"
#include "fleet/crypto/identity.h"
#include "fleet/hub/user_access.h"
#include "fleet/store/open_store.h"

namespace cellserve::fleet {

namespace fs = std::filesystem;

namespace {

// This hub's lease holder id, kept in `path` so that a hub restarted on its data directory holds
// its own leases of before (and releases them at once) rather than waiting for them to expire.
Result<std::string> stored_holder_id(const fs::path& path) {
  if (std::ifstream in(path); in) {
    std::string id(64, '\0');
    in.read(id.data(), static_cast<std::streamsize>(id.size()));
    id.resize(static_cast<size_t>(in.gcount()));
    while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) id.pop_back();
    const bool valid = id.starts_with("hub-") && id.size() < 64 &&
                       std::all_of(id.begin() + 4, id.end(), [](char c) { return std::isxdigit(c) != 0; });
    if (valid) return id;
  }
  const std::string id = "hub-" + random_hex(8);
  const fs::path tmp = path.string() + ".tmp";
  std::ofstream(tmp) << id << "\n";
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) return Status::internal(path.string() + ": " + ec.message());
  return id;
}

}  // namespace

BatchService::BatchService(HubState& state, ReplicaForwarder& forwarder, std::string holder)
    : state_(state), forwarder_(forwarder), holder_(std::move(holder)), workers_(state.clock) {}

LeaseTerms BatchService::line_lease() const { return LeaseTerms{holder_, state_.now_ms(), kLineLeaseMs}; }

Status BatchService::open(const std::string& data_dir, const std::string& store_url) {
  shared_store_ = is_postgres_url(store_url);
  CS_ASSIGN_OR_RETURN(store_, open_batch_store(shared_store_ ? store_url : (fs::path(data_dir) / "batch.db").string()));
  CS_ASSIGN_OR_RETURN(files_, open_batch_file_store(store_url, (fs::path(data_dir) / "batch" / "files").string()));
  if (holder_.empty()) {
    CS_ASSIGN_OR_RETURN(holder_, stored_holder_id(fs::path(data_dir) / "batch" / "hub_id"));
  }
  // Lines that were running when the hub stopped never had their answers recorded: run again.
  // Another hub's leases on a shared store are its own (they expire if it died).
  auto released = shared_store_ ? store_->release_leases(holder_) : store_->release_all_leases();
  if (!released.ok()) return released.status();
  if (*released > 0) {
    state_.log("batches: " + std::to_string(*released) + " lines that were running when the hub stopped run again");
  }
  // Files and batches stored before they carried their deployment's creation time are bound to
  // the deployment of their name now; those of a name with no deployment open nothing.
  CS_ASSIGN_OR_RETURN(std::vector<Deployment> deployments, state_.store->deployments());
  for (const Deployment& d : deployments) CS_RETURN_IF_ERROR(store_->bind_unbound(d.spec.name, d.created_ms));
  return {};
}

void BatchService::start() {
  thread_ = std::thread([this] { loop(); });
}

void BatchService::join() {
  if (thread_.joinable()) thread_.join();
}

bool BatchService::spools_upload(const net::HttpRequest& head) const {
  static constexpr std::string_view kPrefix = "/d/";
  static constexpr std::string_view kSuffix = "/v1/files";
  if (head.method != "POST" || !head.path.starts_with(kPrefix) || !head.path.ends_with(kSuffix)) return false;
  const std::string deployment = head.path.substr(kPrefix.size(), head.path.size() - kPrefix.size() - kSuffix.size());
  if (deployment.empty() || deployment.find('/') != std::string::npos) return false;
  if (state_.open_data_path()) return true;
  const std::string presented = net::request_api_key(head);
  const std::optional<DeploymentView> d = state_.registry.deployment(deployment);
  return state_.is_admin_key(presented) || (d && state_.keys.opens(presented, deployment, d->created_ms));
}

size_t BatchService::forget_deployment(const std::string& name) {
  auto files = store_->delete_deployment(name);
  if (!files.ok()) state_.log("batch store: deployment " + name + ": " + files.status().message());
  for (const std::string& id : files.ok() ? *files : std::vector<std::string>()) remove_file(id);
  workers_.wake();
  return files.ok() ? files->size() : 0;
}

}  // namespace cellserve::fleet
