// The batch runner: one hub thread that validates new batches, leases their lines to replicas
// through the deployment endpoint's routing, and finalizes them (docs/batch.md).
//
// Priority: a line is leased only through WaitingLine::try_now, that is when a replica has a free
// slot and no interactive request waits for one, so batch work fills idle capacity and an
// interactive request is served before the next line. Crash safety: a line's answer is recorded
// in batch.db in the transaction that ends it (fleet/batch/batch_store.h); lines leased when the
// hub died are pending again at start (on SQLite) or once their leases expire (on PostgreSQL, where
// another hub takes them: a line ends only by the holder of its current lease, so exactly once);
// output files are written from the recorded answers, by the one hub that claims finalization.
#include <boost/json.hpp>

#include "fleet/batch/batch_input.h"
#include "fleet/batch/batch_json.h"
#include "fleet/crypto/sha256.h"
#include "fleet/hub/batch_service.h"
#include "fleet/hub/buffered_writer.h"
#include "fleet/hub/device_headers.h"
#include "fleet/hub/first_byte_deadline.h"
#include "fleet/hub/gateway_request.h"
#include "fleet/hub/metered_writer.h"
#include "fleet/hub/replica_failure.h"
#include "fleet/hub/token_reservation.h"

namespace cellserve::fleet {
namespace {

namespace json = boost::json;

// A line that failed this many times without an answer (device gone, 5xx) goes to the error file.
constexpr int kMaxBatchAttempts = 3;
// The longest one line may run on a device (its x-request-timeout).
constexpr int kBatchLineTimeoutSeconds = 900;

// Writes the batch's results in `state` (one per line) to the file `id`, streamed from the
// store into the file store, committed before the file is named in a record. *lines: how many;
// none leaves no file.
Status write_results(BatchStore& store, BatchFileStore& files, const std::string& batch_id, LineState state,
                     const std::string& id, uint64_t* bytes, int* lines) {
  CS_ASSIGN_OR_RETURN(std::unique_ptr<BatchFileWriter> out, files.create(id));
  *bytes = 0;
  CS_ASSIGN_OR_RETURN(*lines, store.for_each_result(batch_id, state, [&](std::string_view result) -> Status {
    CS_RETURN_IF_ERROR(out->write(result));
    CS_RETURN_IF_ERROR(out->write("\n"));
    *bytes += result.size() + 1;
    return {};
  }));
  return *lines > 0 ? out->commit() : Status();
}

// A refusal of one of the fields server/api/token_limit.h reads.
bool is_token_limit_error(const Status& s) {
  const std::string& p = s.param();
  return p == "max_tokens" || p == "max_completion_tokens" || p == "max_output_tokens" || p == "n_predict";
}

// The same file id for the same batch and kind, so a finalization redone after a crash rewrites
// the file it had begun instead of leaving an orphan.
std::string result_file_id(const std::string& batch_id, const char* kind) {
  return "file-" + sha256_hex(batch_id + ":" + kind).substr(0, 24);
}

}  // namespace

void BatchService::loop() {
  do {
    round();
    workers_.reap();
  } while (workers_.wait(std::chrono::milliseconds(250)));
  workers_.join_all();
}

void BatchService::round() {
  auto work = store_->batches_in(
      {BatchStatus::Validating, BatchStatus::InProgress, BatchStatus::Cancelling, BatchStatus::Finalizing});
  if (!work.ok()) return state_.log("batch store: " + work.status().message());
  const int64_t now = state_.now_ms();
  release_stranded();
  // The lines this hub runs keep their leases (a long generation is not taken by another hub).
  if (auto renewed = store_->renew_leases(line_lease()); !renewed.ok()) {
    state_.log("batch store: renewing leases: " + renewed.status().message());
  }
  // Output files past their output_expires_after are deleted, record and bytes.
  if (auto expired = store_->expired_files(now, 100); expired.ok()) {
    for (const std::string& id : *expired) {
      remove_file(id);
      state_.log("file " + id + " expired and was deleted");
    }
  }
  for (Batch& b : *work) {
    switch (b.status) {
      case BatchStatus::Validating:
        validate_batch(b, now);
        break;
      case BatchStatus::InProgress:
        if (now >= b.expires_ms) {
          // What never ran is written as expired, then the batch is finalized.
          end_unrun_lines(b, BatchStatus::Expired, "batch_expired",
                          "This request could not be executed before the completion window expired.", now);
          break;
        }
        if (!complete_when_done(b, now)) dispatch_lines(b);
        break;
      case BatchStatus::Cancelling:
        end_unrun_lines(b, BatchStatus::Cancelled, "batch_cancelled",
                        "The batch was cancelled before this request ran.", now);
        break;
      case BatchStatus::Finalizing:
        // Begun here or by a hub that died finalizing (its claim expired): finished once.
        if (claim_finalization(b)) finalize_batch(b, BatchStatus::Completed, now);
        break;
      default:
        break;
    }
  }
}

void BatchService::strand(const BatchLine& l) {
  std::lock_guard lock(stranded_mu_);
  stranded_.push_back(l);
}

void BatchService::release_stranded() {
  std::vector<BatchLine> lines;
  {
    std::lock_guard lock(stranded_mu_);
    lines.swap(stranded_);
  }
  for (const BatchLine& l : lines) {
    if (!store_->release_line(l, holder_).ok()) strand(l);
  }
}

bool BatchService::claim_finalization(const Batch& b) {
  auto claimed = store_->claim_finalization(b.id, LeaseTerms{holder_, state_.now_ms(), kFinalizeClaimMs});
  if (!claimed.ok()) state_.log("batch " + b.id + ": " + claimed.status().message());
  return claimed.ok() && *claimed;
}

bool BatchService::complete_when_done(Batch& b, int64_t now) {
  auto pending = store_->count_lines(b.id, LineState::Pending);
  if (!pending.ok() || *pending > 0 || workers_.in_flight(b.id) > 0) return false;
  // Lines leased anywhere (by another hub, or by a dead hub's expired lease) are still to end.
  auto leased = store_->count_lines(b.id, LineState::Leased);
  if (!leased.ok() || *leased > 0) return !leased.ok();
  if (!claim_finalization(b)) return true;
  b.status = BatchStatus::Finalizing;
  b.finalizing_ms = now;
  // Finalized once the store says so: a restart (or another hub) then finishes what this began.
  auto written = store_->finish_batch(b, holder_);
  if (!state_.saved(written.status(), "batch " + b.id)) return true;
  if (*written) finalize_batch(b, BatchStatus::Completed, now);
  return true;
}

void BatchService::end_unrun_lines(Batch& b, BatchStatus terminal, const std::string& code, const std::string& message,
                                   int64_t now) {
  // Lines in flight here finish first; so do lines that other hubs hold under live leases.
  if (workers_.in_flight(b.id) > 0 || !claim_finalization(b)) return;
  // Finalized only once every line that never ran is written as such (else next round).
  if (!state_.saved(store_->fail_pending(b.id, code, message, now).status(), "batch " + b.id)) return;
  auto leased = store_->count_lines(b.id, LineState::Leased);
  if (!leased.ok() || *leased > 0) return;
  finalize_batch(b, terminal, now);
}

void BatchService::validate_batch(Batch& b, int64_t now) {
  const std::optional<DeploymentView> dep = state_.registry.deployment(b.deployment);
  const auto check_body = [&](std::string_view body) -> Status {
    auto g = read_gateway_request(body, b.endpoint);
    // A token limit the replica refuses is that line's own error: the replica answers it 400 and
    // the line goes to the error file, as before the hub read limits as the replica does.
    if (!g.ok() && is_token_limit_error(g.status())) return {};
    if (!g.ok()) return g.status();
    if (g->stream) return Status::invalid_argument("'stream' is not supported in a batch");
    if (dep && !dep->serves(g->model)) {
      return Status::invalid_argument("the model '" + g->model.substr(0, 128) + "' is not served by deployment '" +
                                      b.deployment + "'");
    }
    return {};
  };
  auto file = files_->open(b.input_file_id);
  Result<BatchInput> input = file.ok() ? read_batch_input(**file, b.endpoint, check_body) : file.status();
  if (!dep || dep->created_ms != b.deployment_created_ms) input = Status::not_found("the deployment was removed");
  if (!input.ok() || !input->errors.empty()) {
    b.status = BatchStatus::Failed;
    b.failed_ms = now;
    b.errors = input.ok() ? input->errors : std::vector<BatchError>{{"invalid_file", input.status().message(), 0}};
    // Not recorded: the batch stays `validating` in the store and is validated again next round.
    if (!state_.saved(store_->update_batch(b), "batch " + b.id)) return;
    state_.log("batch " + b.id + ": failed validation (" + std::to_string(b.errors.size()) +
               " errors, first: " + b.errors.front().message + ")");
    return;
  }
  b.in_progress_ms = now;
  auto started = store_->start_batch(b, input->lines);
  if (!started.ok()) return state_.log("batch " + b.id + ": " + started.status().message());
  if (*started)
    state_.log("batch " + b.id + ": " + std::to_string(input->lines.size()) + " requests validated; in progress");
}

void BatchService::dispatch_lines(const Batch& b) {
  const std::optional<DeploymentView> dep = state_.registry.deployment(b.deployment);
  if (!dep || dep->created_ms != b.deployment_created_ms) return;  // a deployment since created again
  WaitingLine& line = forwarder_.line(b.deployment);
  if (workers_.stopping()) return;
  // Leave the deployment's reserved slots to interactive requests.
  int free_slots = 0;
  for (const ReplicaView& v : forwarder_.routable(b.deployment, {})) free_slots += std::max(0, v.slots - v.busy);
  const int wanted = free_slots - dep->gateway.batch_reserve_slots;
  if (wanted <= 0) return;
  // Waits while its key is out of requests this minute or tokens today.
  if (!b.key_id.empty() && !state_.keys.has_room(b.key_id, state_.now_ms())) return;
  // The slots first (only while no interactive request waits), then that many lines in one
  // transaction: a large fleet's free slots are filled in one round.
  std::vector<Reservation> slots;
  RequestWork work;
  work.max_tokens = kDefaultMaxTokens;
  while (static_cast<int>(slots.size()) < wanted) {
    Reservation r;
    if (!line.try_now([&] { return forwarder_.reserve(b.deployment, work, {}, r); })) break;
    slots.push_back(std::move(r));
  }
  if (slots.empty()) return;
  auto leased = store_->lease_lines(b.id, static_cast<int>(slots.size()), line_lease());
  if (!leased.ok()) return state_.log("batch " + b.id + ": " + leased.status().message());
  for (size_t i = 0; i < leased->size(); ++i) {
    // std::function wants a copyable callable; the reservation is not.
    auto r = std::make_shared<Reservation>(std::move(slots[i]));
    workers_.start(b.id, [this, b, dep = *dep, l = (*leased)[i], r] { run_line(b, dep, l, std::move(*r)); });
  }
  // Reservations beyond the lines there were end here, with `slots`.
}

void BatchService::run_line(const Batch& b, const DeploymentView& dep, const BatchLine& l, Reservation r) {
  auto file = files_->open(b.input_file_id);
  Result<std::string> read = file.ok() ? (*file)->read_range(l.offset, l.length) : file.status();
  if (!read.ok()) {
    state_.log("batch " + b.id + " line " + std::to_string(l.line) + ": " + read.status().message());
    forwarder_.release(r, dep.name);
    end_line(b, l, LineState::Failed, batch_error_line(l.custom_id, "input_missing", "the input file cannot be read"),
             "");
    return;
  }
  std::string text = std::move(*read);
  // The line is parsed once: its body's work (for the first-byte deadline below), its model and
  // its quota hold are all read from that parse.
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  json::object request;
  if (!ec && v.is_object()) {
    if (json::value* line_body = v.as_object().if_contains("body"); line_body != nullptr && line_body->is_object()) {
      request = std::move(line_body->as_object());
    }
  }
  std::string body = json::serialize(request);
  RequestWork work;
  work.max_tokens = kDefaultMaxTokens;
  if (auto g = read_gateway_request(request, b.endpoint); g.ok()) {
    work = g->work;
    if (!g->model.empty() && g->model != dep.name) body = with_model(request, dep.name);  // replicas know its name
  }
  // Each line counts against its key's rate and holds its most tokens, as a request does; a
  // line the key has no room for goes back, its attempt uncounted, and waits (has_room).
  int64_t held = 0;
  if (!b.key_id.empty()) {
    held = token_reservation(&request, body.size(), std::string_view(b.endpoint).substr(3), dep.ctx_size);
    if (state_.keys.admit_line(b.key_id, held, state_.now_ms()).kind != KeyBook::Check::Kind::Allowed) {
      forwarder_.release(r, dep.name);
      if (Status s = store_->return_line(l, holder_); !s.ok()) {
        state_.log("batch " + b.id + ": " + s.message());
        strand(l);
      }
      return;
    }
  }
  net::HttpRequest fwd;
  fwd.method = "POST";
  fwd.body = std::move(body);
  fwd.headers["content-type"] = "application/json";
  fwd.headers["x-request-timeout"] = std::to_string(kBatchLineTimeoutSeconds);
  set_cache_partition(fwd, b.key_id);
  const size_t request_bytes = fwd.body.size();
  BufferedWriter out;
  MeteredWriter metered(out);  // the answer's usage, counted as for interactive requests
  // A device that never answers fails the line at the hub's first-byte deadline (a batch answer
  // is whole: its first byte comes with its last token).
  const Attempt sent =
      forwarder_.send(r, dep, std::move(fwd), b.endpoint, metered, first_byte_limit(dep.gateway, work, false));
  forwarder_.release(r, dep.name);  // the slot is free again before anyone is woken
  const Status s = sent.expired ? Status::unavailable("no first byte within the hub's deadline") : sent.status;
  const int index = sent.index;
  const std::string& device = sent.processor_id;
  const int status = out.status();
  const bool answered = s.ok() && status >= 200 && status < 300;
  // A client error (or a 501) is the request's own: it would fail anywhere, so it is not retried.
  const bool refused = s.ok() && status >= 400 && status != 408 && !is_replica_failure(status);
  forwarder_.record(dep.name, index, answered || refused, ReplicaForwarder::Metrics::Uncounted);
  forwarder_.settle(b.key_id, held, answered, metered, request_bytes);
  if (answered || refused) {
    end_line(b, l, answered ? LineState::Done : LineState::Failed,
             batch_result_line(l.custom_id, status, out.body(), signature_header(out.headers())), device);
    state_.metrics.count_batch_line(dep.name, device, answered);
    return;
  }
  const std::string why = s.ok() ? "the replica answered " + std::to_string(status) : s.message();
  if (l.attempts >= kMaxBatchAttempts) {
    state_.log("batch " + b.id + " line " + std::to_string(l.line) + ": failed " + std::to_string(l.attempts) +
               " times, last on replica " + std::to_string(index) + ": " + why);
    end_line(b, l, LineState::Failed,
             batch_error_line(l.custom_id, "request_failed",
                              "no answer after " + std::to_string(l.attempts) + " attempts (last: " + why + ")"),
             device);
    state_.metrics.count_batch_line(dep.name, device, false);
    return;
  }
  // Another attempt, on whichever replica is free. A line that cannot be released stays leased
  // until the hub restarts (or, on a shared store, its lease expires), so its batch waits rather
  // than losing it.
  if (!state_.saved(store_->release_line(l, holder_), "batch " + b.id + " line " + std::to_string(l.line))) strand(l);
}

void BatchService::end_line(const Batch& b, const BatchLine& l, LineState state, const std::string& result,
                            const std::string& device) {
  // A line whose end cannot be recorded is released instead: it runs again rather than staying
  // leased with its answer lost.
  const std::string what = "batch " + b.id + " line " + std::to_string(l.line);
  auto ended = store_->end_line(l, line_lease(), state, result, device);
  if (!state_.saved(ended.status(), what)) {
    if (!state_.saved(store_->release_line(l, holder_), what)) strand(l);
    return;
  }
  // The lease expired and the line is another attempt's now (this hub stalled, or the line ran
  // past its lease): this answer is dropped, the line ends once, by its current holder.
  if (!*ended) state_.log(what + ": answer dropped, the line's lease is no longer this hub's");
}

void BatchService::finalize_batch(Batch& b, BatchStatus terminal, int64_t now) {
  for (const auto& [state, kind] : {std::pair{LineState::Done, "output"}, std::pair{LineState::Failed, "errors"}}) {
    BatchFile f;
    f.id = result_file_id(b.id, kind);
    f.deployment = b.deployment;
    f.deployment_created_ms = b.deployment_created_ms;
    f.owner_key = b.key_id;  // the batch's key owns its answers
    if (b.output_expires_after_s > 0) f.expires_ms = now + b.output_expires_after_s * 1000;
    f.filename = b.id + "_" + kind + ".jsonl";
    f.purpose = "batch_output";
    f.created_ms = now;
    int lines = 0;
    if (Status s = write_results(*store_, *files_, b.id, state, f.id, &f.bytes, &lines); !s.ok()) {
      return state_.log("batch " + b.id + ": " + s.message());
    }
    if (lines == 0) continue;
    auto existing = store_->file(f.id);
    if (!existing.ok()) return state_.log("batch " + b.id + ": " + existing.status().message());
    // The batch names the file only once its record is stored (else the next round tries again).
    if (!existing->has_value() && !state_.saved(store_->add_file(f), "batch " + b.id)) return;
    (state == LineState::Done ? b.output_file_id : b.error_file_id) = f.id;
  }
  auto fresh = store_->batch(b.id);
  if (fresh.ok() && fresh->has_value()) {
    b.completed = (*fresh)->completed;
    b.failed = (*fresh)->failed;
  }
  b.status = terminal;
  (terminal == BatchStatus::Completed ? b.completed_ms
   : terminal == BatchStatus::Expired ? b.expired_ms
                                      : b.cancelled_ms) = now;
  auto finished = store_->finish_batch(b, holder_);
  if (!finished.ok()) return state_.log("batch " + b.id + ": " + finished.status().message());
  // Another hub took the claim over (this one stalled past it) and finalizes the batch itself.
  if (!*finished) return state_.log("batch " + b.id + ": finalized by another hub");
  state_.log("batch " + b.id + ": " + batch_status_name(terminal) + " (" + std::to_string(b.completed) + " answered, " +
             std::to_string(b.failed) + " failed)");
}

}  // namespace cellserve::fleet
