// Running one scheduler job for an API handler: queueing it (answering 429/503 itself), waiting
// for its events while watching the client, collecting a whole answer or streaming it as
// Server-Sent Events, and the errors of a job that ended without an answer. Shared by the
// completion endpoints (handlers.cpp) and the Responses API.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/object.hpp>

#include "net/http_types.h"
#include "net/json_error.h"
#include "server/api/api_context.h"
#include "server/api/completion_bodies.h"
#include "server/scheduler/scheduler.h"

namespace cellserve::server {

// Logged for a client that closed the connection before its answer (nginx's convention).
inline constexpr int kClientClosed = 499;

// A 503 "unavailable_error".
net::ApiError unavailable(std::string message);

// The net::ApiError for a job that ended without an answer (ended_without_answer()).
net::ApiError job_error(const JobEvent& done);

// The deadline X-Request-Timeout gives, counted from `now` (the request has been read); max when
// the header is absent. The scheduler keeps the shorter of it and --timeout.
Result<std::chrono::steady_clock::time_point> requested_deadline(const net::HttpRequest& req,
                                                                 std::chrono::steady_clock::time_point now);

// The job's cache_partition from X-Cellserve-Cache-Partition (a fleet hub sets it per API key;
// a client of a standalone `serve` may set its own, which only narrows what it reuses); 0 when
// absent.
uint64_t cache_partition(const net::HttpRequest& req);

// Queues the job, answering the error itself (429 with Retry-After when the queue is full);
// nullptr then.
std::shared_ptr<JobEvents> submit(const ApiContext& ctx, std::string_view endpoint, net::ResponseWriter& writer,
                                  GenerationJob job);

// The next event; nullopt when the client went away (the job is then cancelled).
std::optional<JobEvent> next_event(JobEvents& events, net::ResponseWriter& writer);

// A whole (non-streamed) generation.
struct Collected {
  std::string text;
  std::vector<GeneratedToken> tokens;
  JobEvent done;
};
// nullopt when the client went away.
std::optional<Collected> collect(JobEvents& events, net::ResponseWriter& writer);

// Streams the job's events: `opening` first, then `text_chunks` of each Text event, then
// `final_chunks` of a Stop/Length end, as SSE data lines (job_io.cpp says how errors and a
// leaving client end it). Ends the stream and counts the request once. `done_marker`: end with
// "data: [DONE]" (OpenAI's streams; llama-server's /completion stream has none).
void stream_job(const ApiContext& ctx, std::string_view endpoint, net::ResponseWriter& writer, JobEvents& events,
                const std::vector<std::string>& opening,
                const std::function<std::vector<boost::json::object>(const JobEvent&)>& text_chunks,
                const std::function<std::vector<boost::json::object>(const JobEvent&)>& final_chunks,
                bool done_marker = true);

// The jobs of one request's n choices ("n": n), choice i's events at [i].
using ChoiceJobs = std::vector<std::shared_ptr<JobEvents>>;

// Queues n copies of `job`, choice i with seed job.sampling.seed + i (distinct and reproducible).
// When one cannot be queued, answers the error itself, cancels those queued, and gives nullopt.
std::optional<ChoiceJobs> submit_choices(const ApiContext& ctx, std::string_view endpoint, net::ResponseWriter& writer,
                                         const GenerationJob& job, int64_t n);
void cancel_all(const ChoiceJobs& jobs);
// Every choice's whole generation, in order; nullopt (every job cancelled) when the client left.
std::optional<std::vector<Collected>> collect_all(const ChoiceJobs& jobs, net::ResponseWriter& writer);

// What stream_choices() sends: `text_chunks` for a Text event of choice i, `final_chunks` when
// choice i ends with Stop/Length, and `closing` (may be empty) once every choice has, with their
// Done events in choice order.
struct ChoiceStream {
  std::function<std::vector<boost::json::object>(size_t, const JobEvent&)> text_chunks;
  std::function<std::vector<boost::json::object>(size_t, const JobEvent&)> final_chunks;
  std::function<std::vector<boost::json::object>(const std::vector<JobEvent>&)> closing;
  // How a chunk is sent (empty: sse_data(), one "data:" line; the Responses API adds "event:").
  std::function<std::string(const boost::json::object&)> frame;
  // How an error that ends the stream is sent (empty: a "data:" line with the error body).
  std::function<std::string(const net::ApiError&)> error_frame;
};
// stream_job() for several choices, their events interleaved as they come.
void stream_choices(const ApiContext& ctx, std::string_view endpoint, net::ResponseWriter& writer,
                    const ChoiceJobs& jobs, const std::vector<std::string>& opening, const ChoiceStream& s,
                    bool done_marker = true);

// A fresh id ("<id_prefix>...") and the creation time, for one answer.
ResponseMeta response_meta(const ApiContext& ctx, std::string_view id_prefix);

}  // namespace cellserve::server
