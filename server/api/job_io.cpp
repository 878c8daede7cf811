// Running one scheduler job for an API handler (job_io.h).
#include "server/api/job_io.h"

#include <ctime>

#include <boost/json/serialize.hpp>

#include "net/request_timeout.h"
#include "server/api/reply.h"

namespace cellserve::server {

namespace json = boost::json;

namespace {

// How often a waiting handler checks whether its client is still there. Events wake it at once;
// this only bounds how late a client that left is noticed. Each request in flight wakes this often
// while its tokens are slow to come: a device's agent relays the hub's cancellation within it, and
// 50 ms made a thousand simulated devices on one machine spend their CPU waking up.
constexpr std::chrono::milliseconds kPollInterval{200};

}  // namespace

net::ApiError unavailable(std::string message) {
  return net::api_error_from_status(Status::unavailable(std::move(message)));
}

// The net::ApiError for a job that ended without an answer (ended_without_answer()).
net::ApiError job_error(const JobEvent& done) {
  if (done.finish == FinishReason::Cancelled) return unavailable("the request was cancelled by the server");
  if (done.finish == FinishReason::DeadlineExceeded) {
    // 504 "timeout", whether it passed before the first token or mid-answer: never a 200 whose
    // text is silently cut short.
    return net::api_error(504, done.error.ok() ? "the request's deadline passed" : done.error.message());
  }
  if (done.error.ok()) return net::api_error_from_status(Status::internal("generation failed"));
  return net::api_error_from_status(done.error);
}

// The deadline X-Request-Timeout gives, counted from now (the request has been read); max when the
// header is absent. The scheduler keeps the shorter of it and --timeout.
uint64_t cache_partition(const net::HttpRequest& req) {
  const std::string value = req.header("x-cellserve-cache-partition");
  if (value.empty()) return 0;
  uint64_t h = 1469598103934665603ull;  // FNV-1a over at most 128 bytes of the value
  for (const char c : std::string_view(value).substr(0, 128)) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h == 0 ? 1 : h;
}

Result<std::chrono::steady_clock::time_point> requested_deadline(const net::HttpRequest& req,
                                                                 std::chrono::steady_clock::time_point now) {
  using Clock = std::chrono::steady_clock;
  CS_ASSIGN_OR_RETURN(const std::optional<std::chrono::duration<double>> timeout, net::request_timeout(req));
  if (!timeout) return Clock::time_point::max();
  return now + std::chrono::duration_cast<Clock::duration>(*timeout);
}

// Queues the job, answering the error itself (429 with Retry-After when the queue is full).
std::shared_ptr<JobEvents> submit(const ApiContext& ctx, std::string_view endpoint, net::ResponseWriter& writer,
                                  GenerationJob job) {
  if (ctx.scheduler == nullptr) {
    reply_error(ctx, endpoint, writer, unavailable("the model is not loaded"));
    return nullptr;
  }
  Result<std::shared_ptr<JobEvents>> events = ctx.scheduler->submit(std::move(job));
  if (!events.ok()) {
    reply_error(ctx, endpoint, writer, net::api_error_from_status(events.status()));
    return nullptr;
  }
  return std::move(events).value();
}

// The next event; nullopt when the client went away (the job is then cancelled). The client is
// checked before every event, not only when events pause: a fast generation must not run to
// its end for a client that left (client_gone() is one non-blocking poll).
std::optional<JobEvent> next_event(JobEvents& events, net::ResponseWriter& writer) {
  for (;;) {
    if (writer.client_gone()) {
      events.cancel();
      return std::nullopt;
    }
    if (std::optional<JobEvent> e = events.pop(kPollInterval)) return e;
  }
}

// A whole (non-streamed) generation.

std::optional<Collected> collect(JobEvents& events, net::ResponseWriter& writer) {
  Collected c;
  for (;;) {
    std::optional<JobEvent> e = next_event(events, writer);
    if (!e) return std::nullopt;
    if (e->kind == JobEvent::Kind::Done) {
      c.done = std::move(*e);
      return c;
    }
    c.text += e->text;
    for (GeneratedToken& t : e->tokens) c.tokens.push_back(std::move(t));
  }
}

std::optional<ChoiceJobs> submit_choices(const ApiContext& ctx, std::string_view endpoint, net::ResponseWriter& writer,
                                         const GenerationJob& job, int64_t n) {
  ChoiceJobs jobs;
  for (int64_t i = 0; i < n; ++i) {
    GenerationJob copy = job;
    copy.sampling.seed = job.sampling.seed + static_cast<uint64_t>(i);  // distinct, reproducible choices
    std::shared_ptr<JobEvents> events = submit(ctx, endpoint, writer, std::move(copy));
    if (events == nullptr) {  // answered (429 when the queue is full): the choices queued so far go
      for (auto& e : jobs) e->cancel();
      return std::nullopt;
    }
    jobs.push_back(std::move(events));
  }
  return jobs;
}

void cancel_all(const ChoiceJobs& jobs) {
  for (const auto& e : jobs) e->cancel();
}

std::optional<std::vector<Collected>> collect_all(const ChoiceJobs& jobs, net::ResponseWriter& writer) {
  std::vector<Collected> out;
  for (const auto& events : jobs) {  // the others keep generating meanwhile
    std::optional<Collected> c = collect(*events, writer);
    if (!c) {
      cancel_all(jobs);
      return std::nullopt;
    }
    out.push_back(std::move(*c));
  }
  return out;
}

namespace {

// The next event of any choice that has not ended, taken in turn so that no choice starves;
// nullopt when the client went away (every job is then cancelled).
std::optional<std::pair<size_t, JobEvent>> next_choice_event(const ChoiceJobs& jobs, const std::vector<bool>& ended,
                                                             size_t& turn, net::ResponseWriter& writer) {
  size_t live = 0;
  for (bool e : ended) live += !e;
  // One choice left: wait on it as next_event() does; several: a short wait on each in turn.
  const std::chrono::milliseconds wait = live == 1 ? kPollInterval : std::chrono::milliseconds(2);
  for (;;) {
    if (writer.client_gone()) {
      cancel_all(jobs);
      return std::nullopt;
    }
    for (size_t k = 0; k < jobs.size(); ++k) {
      const size_t i = (turn + k) % jobs.size();
      if (ended[i]) continue;
      if (std::optional<JobEvent> e = jobs[i]->pop(wait)) {
        turn = i + 1;
        return std::pair<size_t, JobEvent>{i, std::move(*e)};
      }
    }
  }
}

}  // namespace

// Nothing is sent before the first event of any choice, so a job that ends without an answer by
// then (its deadline passed in the queue, an error) gets a plain error response with its own
// status. Later, such an end is an SSE error event and [DONE] (as the hub's relay ends a broken
// stream), never a clean final chunk, and the other choices are cancelled. Ends the stream in
// every case, and counts the request once, with how it ended: 200, the error's status (504 at the
// deadline), or 499 when the client left.
void stream_choices(const ApiContext& ctx, std::string_view endpoint, net::ResponseWriter& writer,
                    const ChoiceJobs& jobs, const std::vector<std::string>& opening, const ChoiceStream& s,
                    bool done_marker) {
  std::vector<bool> ended(jobs.size(), false);
  std::vector<JobEvent> dones(jobs.size());
  size_t turn = 0;
  std::optional<std::pair<size_t, JobEvent>> e = next_choice_event(jobs, ended, turn, writer);
  if (!e) return count_request(ctx, endpoint, kClientClosed);
  if (e->second.kind == JobEvent::Kind::Done && ended_without_answer(e->second.finish)) {
    cancel_all(jobs);
    return reply_error(ctx, endpoint, writer, job_error(e->second));
  }
  if (!writer.begin_stream(200, "text/event-stream", {{"Cache-Control", "no-cache"}})) {
    cancel_all(jobs);
    return count_request(ctx, endpoint, kClientClosed);
  }
  const auto end = [&](int status) {
    writer.end_stream();
    count_request(ctx, endpoint, status);
  };
  const auto gone = [&] {
    cancel_all(jobs);
    end(kClientClosed);
  };
  const auto send = [&](const std::vector<json::object>& chunks) {
    for (const json::object& chunk : chunks)
      if (!writer.write(s.frame ? s.frame(chunk) : sse_data(chunk))) return false;
    return true;
  };
  for (const std::string& data : opening) {
    if (!writer.write(data)) return gone();
  }
  size_t left = jobs.size();
  for (;; e = next_choice_event(jobs, ended, turn, writer)) {
    if (!e) return end(kClientClosed);
    auto& [i, event] = *e;
    if (event.kind == JobEvent::Kind::Text) {
      if (!send(s.text_chunks(i, event))) return gone();
      continue;
    }
    if (ended_without_answer(event.finish)) {
      cancel_all(jobs);
      const net::ApiError error = job_error(event);
      const std::string sent = s.error_frame ? s.error_frame(error) : "data: " + net::error_body(error) + "\n\n";
      (void)(writer.write(sent) && (!done_marker || writer.write(kSseDone)));
      return end(error.http_status);
    }
    if (!send(s.final_chunks(i, event))) return gone();
    ended[i] = true;
    dones[i] = std::move(event);
    if (--left > 0) continue;
    if (s.closing && !send(s.closing(dones))) return gone();
    if (done_marker) (void)writer.write(kSseDone);
    return end(200);
  }
}

void stream_job(const ApiContext& ctx, std::string_view endpoint, net::ResponseWriter& writer, JobEvents& events,
                const std::vector<std::string>& opening,
                const std::function<std::vector<json::object>(const JobEvent&)>& text_chunks,
                const std::function<std::vector<json::object>(const JobEvent&)>& final_chunks, bool done_marker) {
  // One choice; the events are the caller's (a non-owning pointer).
  const ChoiceJobs jobs{std::shared_ptr<JobEvents>(std::shared_ptr<JobEvents>(), &events)};
  ChoiceStream s;
  s.text_chunks = [&](size_t, const JobEvent& e) { return text_chunks(e); };
  s.final_chunks = [&](size_t, const JobEvent& e) { return final_chunks(e); };
  stream_choices(ctx, endpoint, writer, jobs, opening, s, done_marker);
}

ResponseMeta response_meta(const ApiContext& ctx, std::string_view id_prefix) {
  return ResponseMeta{make_response_id(id_prefix), std::time(nullptr), ctx.model_id};
}

}  // namespace cellserve::server
