// A deployment's OpenAI Files and Batches API, at /d/<deployment>/v1/files and /v1/batches
// (docs/batch.md). Files' bytes are in the BatchFileStore (DATA_DIR/batch/files/<id>, or chunk
// rows on PostgreSQL); batches and their lines in the batch store; the runner (batch_runner.cpp)
// works them. Every route answers in OpenAI's shapes.
#include <charconv>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>

#include <boost/json.hpp>

#include "fleet/batch/batch_json.h"
#include "fleet/crypto/identity.h"
#include "fleet/hub/batch_service.h"
#include "fleet/hub/gateway_request.h"
#include "fleet/hub/user_access.h"
#include "fleet/spec/agent_protocol.h"
#include "fleet/spec/replica_address.h"
#include "net/multipart.h"

namespace cellserve::fleet {
namespace {

namespace json = boost::json;
namespace fs = std::filesystem;
using net::HttpRequest;
using net::PathParams;
using net::ResponseWriter;

constexpr int kDefaultListLimit = 20;
constexpr int kMaxListLimit = 100;

// ?limit=N&after=ID, as OpenAI's list endpoints take them.
struct Page {
  int limit = kDefaultListLimit;
  std::string after;
};

Result<Page> read_page(const HttpRequest& req) {
  Page p;
  if (const std::string limit = req.query_param("limit"); !limit.empty()) {
    int n = 0;
    const auto [end, ec] = std::from_chars(limit.data(), limit.data() + limit.size(), n);
    if (ec != std::errc() || end != limit.data() + limit.size() || n < 1 || n > kMaxListLimit) {
      return Status::invalid_argument("limit must be an integer in [1, " + std::to_string(kMaxListLimit) + "]");
    }
    p.limit = n;
  }
  p.after = req.query_param("after");
  if (p.after.size() > 64) return Status::invalid_argument("after is not an id");
  return p;
}

// A list answer: `load` fetches one more than the page's limit, so that has_more is known.
template <typename Load, typename ToJson>
void send_page(const HttpRequest& req, ResponseWriter& w, const Load& load, const ToJson& to_json) {
  auto page = read_page(req);
  if (!page.ok()) return send_error(w, 400, page.status().message());
  auto items = load(*page);
  if (!items.ok()) return send_error(w, 500, items.status().message());
  const bool more = static_cast<int>(items->size()) > page->limit;
  if (more) items->pop_back();
  json::array data;
  for (const auto& item : *items) data.push_back(to_json(item));
  send_json(w, 200, json::serialize(list_json(std::move(data), more)));
}

bool valid_id(const std::string& id, std::string_view prefix) {
  if (!id.starts_with(prefix) || id.size() > prefix.size() + 64) return false;
  for (char c : std::string_view(id).substr(prefix.size())) {
    if (!std::isalnum(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

// OpenAI's output_expires_after: {"anchor": "created_at", "seconds": 3600..2592000}; the seconds.
Result<int64_t> read_output_expires_after(const json::value& v) {
  constexpr int64_t kMin = 3600, kMax = 30LL * 24 * 3600;
  const auto bad = [] {
    return Status::invalid_argument(
        "output_expires_after must be {\"anchor\": \"created_at\", \"seconds\": 3600..2592000}");
  };
  if (!v.is_object() || v.as_object().size() != 2) return bad();
  const json::value* anchor = v.as_object().if_contains("anchor");
  const json::value* seconds = v.as_object().if_contains("seconds");
  if (anchor == nullptr || !anchor->is_string() || anchor->as_string() != "created_at") return bad();
  if (seconds == nullptr || !seconds->is_int64() || seconds->as_int64() < kMin || seconds->as_int64() > kMax) {
    return bad();
  }
  return seconds->as_int64();
}

// The record `found` when it is in the caller's scope: the deployment as created now and, for a
// key, its own (`owner`). Another key's record is answered as none at all: its existence is not
// confirmed either.
template <typename T>
std::optional<T> in_scope(const Result<std::optional<T>>& found, const BatchStore::Scope& scope,
                          std::string T::*owner) {
  if (!found.ok() || !found->has_value()) return std::nullopt;
  const T& record = **found;
  if (record.deployment != scope.deployment || record.deployment_created_ms != scope.deployment_created_ms ||
      (!scope.owner.empty() && record.*owner != scope.owner)) {
    return std::nullopt;
  }
  return record;
}

void send_not_found(ResponseWriter& w, const std::string& what) {
  net::ApiError e = net::api_error(404, "No such " + what);
  e.code = "not_found";
  w.send(404, "application/json", net::error_body(e));
}

}  // namespace

void BatchService::add_routes(net::RouteTable& routes) {
  // Every route admits its caller as the deployment endpoint does (user_access.h), then sees the
  // caller's scope: a key's own files and batches, the admin's all (issue 43 item 9).
  const auto admitted = [this](std::function<void(const Call&, ResponseWriter&)> handler) {
    return [this, handler](const HttpRequest& req, const PathParams& p, ResponseWriter& w) {
      const std::string& name = p.get("deployment");
      std::string key_id;
      if (!user_allowed(state_, req, w, name, &key_id)) return;
      if (!valid_deployment_name(name)) return send_error(w, 404, "no deployment named '" + name.substr(0, 64) + "'");
      if (!state_.registry.deployment(name)) return send_error(w, 404, "no deployment named '" + name + "'");
      handler(Call{req, scope(name, key_id), p.get("id")}, w);
    };
  };
  // Each path's methods, so that another method is answered 405 (after the same admission)
  // rather than taken for a model request by the Gateway's catch-all.
  std::map<std::string, std::string> allowed;
  const auto add = [&](const std::string& method, const std::string& path, Handler handler) {
    const std::string pattern = "/d/{deployment}/v1" + path;
    routes.add(method, pattern,
               admitted([this, handler](const Call& call, ResponseWriter& w) { (this->*handler)(call, w); }));
    std::string& methods = allowed[pattern];
    methods += (methods.empty() ? "" : ", ") + method;
    if (method == "GET") methods += ", HEAD";
  };
  add("POST", "/files", &BatchService::upload_file);
  add("GET", "/files", &BatchService::list_files);
  add("GET", "/files/{id}", &BatchService::show_file);
  add("GET", "/files/{id}/content", &BatchService::file_content);
  add("DELETE", "/files/{id}", &BatchService::delete_file);
  add("POST", "/batches", &BatchService::create_batch);
  add("GET", "/batches", &BatchService::list_batches);
  add("GET", "/batches/{id}", &BatchService::show_batch);
  // A cellserve addition: which devices answered the batch, and its requests per hour so far.
  add("GET", "/batches/{id}/throughput", &BatchService::batch_throughput);
  add("POST", "/batches/{id}/cancel", &BatchService::cancel_batch);
  for (const auto& [pattern, methods] : allowed) {
    // As the route table answers a path's other methods: 405 naming them.
    routes.add("*", pattern, admitted([allow = methods](const Call&, ResponseWriter& w) {
                 send_error(w, 405, "use " + allow + " for this path", {{"Allow", allow}});
               }));
  }
}

void BatchService::list_files(const Call& call, net::ResponseWriter& w) {
  send_page(
      call.req, w, [&](const Page& page) { return store_->files(call.scope, page.after, page.limit + 1); }, file_json);
}

void BatchService::show_file(const Call& call, net::ResponseWriter& w) {
  auto f = deployment_file(call.scope, call.id);
  if (!f) return send_not_found(w, "file: " + call.id.substr(0, 80));
  send_json(w, 200, json::serialize(file_json(*f)));
}

void BatchService::file_content(const Call& call, net::ResponseWriter& w) {
  auto f = deployment_file(call.scope, call.id);
  if (!f) return send_not_found(w, "file: " + call.id.substr(0, 80));
  auto in = files_->open(f->id);
  if (!in.ok()) return send_error(w, 500, in.status().message());
  if (!w.begin_stream(200, "application/octet-stream")) return;
  // A piece at a time (one chunk row on PostgreSQL): never the whole file in memory.
  std::vector<char> buf(kBatchFileChunkBytes);
  uint64_t sent = 0;
  while (true) {
    auto got = (*in)->read_at(sent, buf.data(), buf.size());
    if (!got.ok()) {
      // The status line is sent: a cut-short body is all the client can be told.
      state_.log("file " + f->id + ": download cut short: " + got.status().message());
      break;
    }
    if (*got == 0 || !w.write(std::string_view(buf.data(), *got))) break;
    sent += *got;
  }
  w.end_stream();
}

void BatchService::delete_file(const Call& call, net::ResponseWriter& w) {
  auto f = deployment_file(call.scope, call.id);
  if (!f) return send_not_found(w, "file: " + call.id.substr(0, 80));
  if (Status st = store_->delete_file(f->id); !st.ok()) return send_error(w, 500, st.message());
  if (Status st = files_->remove(f->id); !st.ok()) state_.log("file " + f->id + ": " + st.message());
  send_json(w, 200, json::serialize(json::object{{"id", f->id}, {"object", "file"}, {"deleted", true}}));
}

void BatchService::list_batches(const Call& call, net::ResponseWriter& w) {
  send_page(
      call.req, w, [&](const Page& page) { return store_->batches(call.scope, page.after, page.limit + 1); },
      batch_json);
}

void BatchService::show_batch(const Call& call, net::ResponseWriter& w) {
  auto b = deployment_batch(call.scope, call.id);
  if (!b) return send_not_found(w, "batch: " + call.id.substr(0, 80));
  send_json(w, 200, json::serialize(batch_json(*b)));
}

BatchStore::Scope BatchService::scope(const std::string& deployment, const std::string& key_id) {
  const std::optional<DeploymentView> d = state_.registry.deployment(deployment);
  return BatchStore::Scope{deployment, d ? d->created_ms : -1, key_id};
}

std::optional<BatchFile> BatchService::deployment_file(const BatchStore::Scope& scope, const std::string& id) {
  if (!valid_id(id, "file-")) return std::nullopt;
  return in_scope(store_->file(id), scope, &BatchFile::owner_key);
}

std::optional<Batch> BatchService::deployment_batch(const BatchStore::Scope& scope, const std::string& id) {
  if (!valid_id(id, "batch_")) return std::nullopt;
  return in_scope(store_->batch(id), scope, &Batch::key_id);
}

void BatchService::remove_file(const std::string& id) {
  if (Status s = store_->delete_file(id); !s.ok() && s.code() != StatusCode::NotFound) {
    state_.log("batch store: file " + id + ": " + s.message());
  }
  if (Status s = files_->remove(id); !s.ok()) state_.log("batch files: file " + id + ": " + s.message());
}

void BatchService::upload_file(const Call& call, net::ResponseWriter& w) {
  const net::HttpRequest& req = call.req;
  const BatchStore::Scope& scope = call.scope;
  const std::string& deployment = scope.deployment;
  BatchFile f;
  f.id = "file-" + random_hex(12);
  f.deployment = deployment;
  f.deployment_created_ms = scope.deployment_created_ms;
  f.owner_key = scope.owner;
  f.created_ms = state_.now_ms();
  // The file part is copied out of the spooled body here, then into the file store.
  const std::string dest = files_->scratch_dir() + "/" + f.id + ".upload";
  // The body was spooled to a file by the HTTP server (a batch file can be hundreds of MiB).
  std::string body_path = req.body_file;
  std::string own_copy;
  if (body_path.empty()) {
    own_copy = dest + ".body";
    std::ofstream(own_copy, std::ios::binary) << req.body;
    body_path = own_copy;
  }
  auto form = net::read_multipart(body_path, req.header("content-type"), dest, kMaxFileBytes);
  if (!own_copy.empty()) fs::remove(own_copy);
  if (!form.ok()) return send_error(w, 400, form.status().message());
  const auto purpose = form->fields.find("purpose");
  if (!form->file) return send_error(w, 400, "the form has no 'file' part");
  const auto cleanup = [&] {
    std::error_code ec;
    fs::remove(dest, ec);
  };
  if (purpose == form->fields.end() || purpose->second != "batch") {
    cleanup();
    return send_error(w, 400, "purpose must be \"batch\" (the only purpose this hub keeps files for)");
  }
  f.filename = form->file->filename.substr(0, 255);
  f.purpose = "batch";
  f.bytes = form->file->bytes;
  // The bytes are stored (synced, or committed) before the record says so.
  if (Status s = files_->adopt(f.id, dest); !s.ok()) {
    cleanup();
    return send_error(w, 500, s.message());
  }
  if (Status s = store_->add_file(f); !s.ok()) {
    remove_file(f.id);
    return send_error(w, 500, s.message());
  }
  state_.log("deployment " + deployment + ": file " + f.id + " uploaded (" + std::to_string(f.bytes) + " bytes)");
  send_json(w, 200, json::serialize(file_json(f)));
}

void BatchService::create_batch(const Call& call, net::ResponseWriter& w) {
  const net::HttpRequest& req = call.req;
  const BatchStore::Scope& scope = call.scope;
  const std::string& deployment = scope.deployment;
  auto body = parse_json(req.body, "request body");
  if (!body.ok() || !body->is_object()) return send_error(w, 400, "the body must be a JSON object");
  const json::object& o = body->as_object();
  for (const auto& kv : o) {
    const std::string_view key = kv.key();
    if (key != "input_file_id" && key != "endpoint" && key != "completion_window" && key != "metadata" &&
        key != "output_expires_after") {
      return send_error(w, 400, "unknown parameter '" + std::string(key.substr(0, 64)) + "'");
    }
  }
  const json::value* input = o.if_contains("input_file_id");
  const json::value* endpoint = o.if_contains("endpoint");
  const json::value* window = o.if_contains("completion_window");
  if (input == nullptr || !input->is_string()) return send_error(w, 400, "input_file_id is required");
  if (endpoint == nullptr || !endpoint->is_string() ||
      (endpoint->as_string() != "/v1/chat/completions" && endpoint->as_string() != "/v1/completions")) {
    return send_error(w, 400, "endpoint must be \"/v1/chat/completions\" or \"/v1/completions\"");
  }
  if (window == nullptr || !window->is_string() || window->as_string() != "24h") {
    return send_error(w, 400, "completion_window must be \"24h\"");
  }
  Batch b;
  b.metadata_json = "null";
  if (const json::value* metadata = o.if_contains("metadata"); metadata != nullptr && !metadata->is_null()) {
    // OpenAI's limits: up to 16 string pairs, keys up to 64 characters, values up to 512.
    if (!metadata->is_object() || metadata->as_object().size() > 16) {
      return send_error(w, 400, "metadata must be an object of at most 16 string pairs");
    }
    for (const auto& kv : metadata->as_object()) {
      if (kv.key().size() > 64 || !kv.value().is_string() || kv.value().as_string().size() > 512) {
        return send_error(w, 400, "metadata keys must be at most 64 characters and values strings of at most 512");
      }
    }
    b.metadata_json = json::serialize(*metadata);
  }
  if (const json::value* after = o.if_contains("output_expires_after"); after != nullptr && !after->is_null()) {
    auto seconds = read_output_expires_after(*after);
    if (!seconds.ok()) return send_error(w, 400, seconds.status().message());
    b.output_expires_after_s = *seconds;
  }
  const std::string input_id(input->as_string());
  if (!deployment_file(scope, input_id)) return send_not_found(w, "file: " + input_id.substr(0, 80));
  b.id = "batch_" + random_hex(12);
  b.deployment = deployment;
  b.endpoint = std::string(endpoint->as_string());
  b.input_file_id = input_id;
  b.key_id = scope.owner;
  b.deployment_created_ms = scope.deployment_created_ms;
  b.completion_window = "24h";
  b.status = BatchStatus::Validating;
  b.created_ms = state_.now_ms();
  b.expires_ms = b.created_ms + 24 * 3600 * 1000LL;
  if (Status s = store_->create_batch(b, {}); !s.ok()) return send_error(w, 500, s.message());
  state_.log("deployment " + deployment + ": batch " + b.id + " created from " + input_id);
  workers_.wake();
  send_json(w, 200, json::serialize(batch_json(b)));
}

void BatchService::batch_throughput(const Call& call, net::ResponseWriter& w) {
  const BatchStore::Scope& scope = call.scope;
  const std::string& id = call.id;
  std::optional<Batch> b = deployment_batch(scope, id);
  if (!b) return send_not_found(w, "batch: " + id.substr(0, 80));
  auto t = store_->throughput(id);
  if (!t.ok()) return send_error(w, 500, t.status().message());
  // Over the time the batch has run: from in progress to its last answer (or now while running).
  const int64_t end = b->status == BatchStatus::InProgress || b->status == BatchStatus::Cancelling
                          ? state_.now_ms()
                          : std::max(t->last_ended_ms, b->in_progress_ms);
  const double hours = b->in_progress_ms > 0 ? static_cast<double>(end - b->in_progress_ms) / 3.6e6 : 0;
  json::array devices;
  for (const auto& [device, n] : t->answered_by_device) {
    devices.push_back(
        json::object{{"device", device}, {"answered", n}, {"requests_per_hour", hours > 0 ? n / hours : 0.0}});
  }
  send_json(w, 200,
            json::serialize(json::object{{"object", "batch.throughput"},
                                         {"batch_id", id},
                                         {"answered", b->completed},
                                         {"failed", b->failed},
                                         {"total", b->total},
                                         {"elapsed_seconds", hours * 3600},
                                         {"requests_per_hour", hours > 0 ? b->completed / hours : 0.0},
                                         {"devices", std::move(devices)}}));
}

void BatchService::cancel_batch(const Call& call, net::ResponseWriter& w) {
  const BatchStore::Scope& scope = call.scope;
  const std::string& id = call.id;
  std::optional<Batch> b = deployment_batch(scope, id);
  if (!b) return send_not_found(w, "batch: " + id.substr(0, 80));
  // Conditional: a batch that ended meanwhile (here or on another hub) stays as it ended.
  auto cancelled = store_->cancel_batch(id, state_.now_ms());
  if (!cancelled.ok()) return send_error(w, 500, cancelled.status().message());
  if (*cancelled) {
    state_.log("batch " + id + ": cancelling; lines in flight finish");
    workers_.wake();
  } else if (auto fresh = store_->batch(id);
             fresh.ok() && fresh->has_value() && (*fresh)->status != BatchStatus::Cancelling) {
    b = **fresh;
    net::ApiError e =
        net::api_error(409, "Cannot cancel a batch with status " + std::string(batch_status_name(b->status)));
    return w.send(409, "application/json", net::error_body(e));
  }
  auto now = store_->batch(id);
  send_json(w, 200, json::serialize(batch_json(now.ok() && now->has_value() ? **now : *b)));
}

}  // namespace cellserve::fleet
