// The batch runner: one hub thread that validates new batches, leases their lines to replicas
// through the deployment endpoint's routing, and finalizes them (docs/batch.md).
//
// Priority: a line is leased only through WaitingLine::try_now, that is when a replica has a free
// slot and no interactive request waits for one, so batch work fills idle capacity and an
// interactive request is served before the next line. Crash safety: a line's answer is recorded
// in batch.db in the transaction that ends it (fleet/batch/batch_store.h); lines leased when the
// hub died are pending again at start; output files are written from the recorded answers.
#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

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
#include "fleet/hub/token_reservation.h"

namespace cellserve::fleet {
namespace {

namespace json = boost::json;
namespace fs = std::filesystem;

// A line that failed this many times without an answer (device gone, 5xx) goes to the error file.
constexpr int kMaxBatchAttempts = 3;
// The longest one line may run on a device (its x-request-timeout).
constexpr int kBatchLineTimeoutSeconds = 900;

// Writes the batch's results in `state` (one per line) to `path`, streamed from the store, and
// syncs the file before it is named in a record. *lines: how many; none leaves no file.
Status write_results(BatchStore& store, const std::string& batch_id, LineState state, const std::string& path,
                     uint64_t* bytes, int* lines) {
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Status::internal(tmp + ": cannot create");
  *bytes = 0;
  auto written = store.for_each_result(batch_id, state, [&](std::string_view result) -> Status {
    for (const std::string_view piece : {result, std::string_view("\n")}) {
      size_t done = 0;
      while (done < piece.size()) {
        const ssize_t n = ::write(fd, piece.data() + done, piece.size() - done);
        if (n <= 0) return Status::internal(tmp + ": write failed");
        done += static_cast<size_t>(n);
      }
      *bytes += piece.size();
    }
    return {};
  });
  const bool synced = written.ok() && ::fsync(fd) == 0;
  ::close(fd);
  std::error_code ec;
  if (!written.ok() || !synced || *written == 0) {
    fs::remove(tmp, ec);
    if (!written.ok()) return written.status();
    if (!synced) return Status::internal(tmp + ": fsync failed");
    *lines = 0;
    return {};
  }
  *lines = *written;
  fs::rename(tmp, path, ec);
  if (ec) return Status::internal(path + ": " + ec.message());
  return {};
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
      case BatchStatus::InProgress: {
        if (now >= b.expires_ms) {
          // Lines in flight finish first; what never ran is written as expired.
          if (workers_.in_flight(b.id) > 0) break;
          // Finalized only once every line that never ran is written as expired (else next round).
          if (!state_.saved(store_
                                ->fail_pending(b.id, "batch_expired",
                                               "This request could not be executed before the completion window "
                                               "expired.")
                                .status(),
                            "batch " + b.id)) {
            break;
          }
          finalize_batch(b, BatchStatus::Expired, now);
          break;
        }
        auto pending = store_->count_lines(b.id, LineState::Pending);
        if (pending.ok() && *pending == 0 && workers_.in_flight(b.id) == 0) {
          auto leased = store_->count_lines(b.id, LineState::Leased);
          if (leased.ok() && *leased == 0) {
            b.status = BatchStatus::Finalizing;
            b.finalizing_ms = now;
            // Finalized once the store says so: a restart then finishes what this round began.
            if (state_.saved(store_->update_batch(b), "batch " + b.id)) finalize_batch(b, BatchStatus::Completed, now);
          }
          break;
        }
        dispatch_lines(b);
        break;
      }
      case BatchStatus::Cancelling:
        if (workers_.in_flight(b.id) > 0) break;
        if (!state_.saved(
                store_->fail_pending(b.id, "batch_cancelled", "The batch was cancelled before this request ran.")
                    .status(),
                "batch " + b.id)) {
          break;  // tried again next round
        }
        finalize_batch(b, BatchStatus::Cancelled, now);
        break;
      case BatchStatus::Finalizing:
        finalize_batch(b, BatchStatus::Completed, now);
        break;
      default:
        break;
    }
  }
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
  auto input = read_batch_input(file_path(b.input_file_id), b.endpoint, check_body);
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
  auto leased = store_->lease_lines(b.id, static_cast<int>(slots.size()));
  if (!leased.ok()) return state_.log("batch " + b.id + ": " + leased.status().message());
  for (size_t i = 0; i < leased->size(); ++i) {
    // std::function wants a copyable callable; the reservation is not.
    auto r = std::make_shared<Reservation>(std::move(slots[i]));
    workers_.start(b.id, [this, b, dep = *dep, l = (*leased)[i], r] { run_line(b, dep, l, std::move(*r)); });
  }
  // Reservations beyond the lines there were end here, with `slots`.
}

void BatchService::run_line(const Batch& b, const DeploymentView& dep, const BatchLine& l, Reservation r) {
  std::string text(l.length, '\0');
  {
    std::ifstream in(file_path(b.input_file_id), std::ios::binary);
    in.seekg(static_cast<std::streamoff>(l.offset));
    in.read(text.data(), static_cast<std::streamsize>(l.length));
    if (!in) {
      end_line(b, l, LineState::Failed, batch_error_line(l.custom_id, "input_missing", "the input file cannot be read"),
               "");
      return;
    }
  }
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
      if (Status s = store_->return_line(b.id, l.line); !s.ok()) state_.log("batch " + b.id + ": " + s.message());
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
  // A client error is the request's own: it would fail anywhere, so it is not retried.
  const bool refused = s.ok() && status >= 400 && status < 500 && status != 408 && status != 429;
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
  // until the hub restarts (release_all_leases), so its batch waits rather than losing it.
  state_.saved(store_->release_line(b.id, l.line), "batch " + b.id + " line " + std::to_string(l.line));
}

void BatchService::end_line(const Batch& b, const BatchLine& l, LineState state, const std::string& result,
                            const std::string& device) {
  // A line whose end cannot be recorded is released instead: it runs again rather than staying
  // leased with its answer lost.
  const std::string what = "batch " + b.id + " line " + std::to_string(l.line);
  if (state_.saved(store_->end_line(b.id, l.line, state, result, device, state_.now_ms()).status(), what)) return;
  state_.saved(store_->release_line(b.id, l.line), what);
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
    if (Status s = write_results(*store_, b.id, state, file_path(f.id), &f.bytes, &lines); !s.ok()) {
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
  if (Status s = store_->update_batch(b); !s.ok()) return state_.log("batch " + b.id + ": " + s.message());
  state_.log("batch " + b.id + ": " + batch_status_name(terminal) + " (" + std::to_string(b.completed) + " answered, " +
             std::to_string(b.failed) + " failed)");
}

}  // namespace cellserve::fleet
