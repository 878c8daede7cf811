#include "fleet/tunnel/tunnel_client.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "fleet/tunnel/h2_headers.h"
#include "fleet/tunnel/h2_loop.h"
#include "fleet/tunnel/h2_session.h"
#include "fleet/tunnel/hub_stream.h"

namespace cellserve::fleet {

using Clock = H2Loop::Clock;

struct TunnelClient::State {
  TunnelOptions options;
  std::unique_ptr<H2Loop> loop;

  // I/O thread only.
  std::unordered_map<int32_t, std::shared_ptr<HubStream>> streams;  // submitted, not yet closed
  bool ping_outstanding = false;
  Clock::time_point ping_sent;
  Clock::time_point next_ping = Clock::now();  // the first PING goes out at once
  uint64_t ping_seq = 0;

  std::atomic<int64_t> ping_rtt_us{-1};

  std::mutex close_mu;  // guards close_callback, close_fired
  std::function<void()> close_callback;
  bool close_fired = false;

  HubStream* find(int32_t id) {
    const auto it = streams.find(id);
    return it == streams.end() ? nullptr : it->second.get();
  }
  bool submit(const std::shared_ptr<HubStream>& stream, net::HeaderList headers);
  void cancel(const std::shared_ptr<HubStream>& stream);
  void consume(const std::shared_ptr<HubStream>& stream, size_t bytes);
  Status relay(HubStream& stream, const std::shared_ptr<HubStream>& ref, net::ResponseWriter& out, bool* responded);
  bool tick(nghttp2_session* session, Clock::time_point now, Clock::time_point* wake, std::string* why);
  void on_ping_ack(const nghttp2_ping& ping);
  void on_exit(const std::string& why);
};

namespace {

using State = TunnelClient::State;

// How often a waiting forward() asks its writer whether the user is still there. Every request in
// flight wakes this often while its device works: at 100 ms, a thousand slow requests cost the
// hub 10,000 wake-ups a second (bench/cluster_bench.mjs, docs/cluster.md), for a cancellation
// passed on a few tenths of a second sooner.
constexpr auto kGonePoll = std::chrono::milliseconds(250);

void fail(HubStream& stream, Status status) {
  std::lock_guard lock(stream.mu);
  if (stream.error.ok()) stream.error = std::move(status);
  stream.cv.notify_all();
}

int on_begin_headers(nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
  if (HubStream* stream = static_cast<State*>(user_data)->find(frame->hd.stream_id)) {
    stream->pending_status = 0;
    stream->pending_headers.clear();
    stream->pending_header_bytes = 0;
  }
  return 0;
}

int on_header(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name_data, size_t name_len,
              const uint8_t* value_data, size_t value_len, uint8_t, void* user_data) {
  auto* state = static_cast<State*>(user_data);
  HubStream* stream = state->find(frame->hd.stream_id);
  if (stream == nullptr) return 0;
  stream->pending_header_bytes += name_len + value_len + 32;  // RFC 9113's per-field overhead
  if (stream->pending_header_bytes > state->options.max_response_headers) {
    fail(*stream, Status::resource_exhausted("the agent's response headers exceed " +
                                             std::to_string(state->options.max_response_headers) + " bytes"));
    return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;  // resets this stream only
  }
  std::string name(reinterpret_cast<const char*>(name_data), name_len);
  std::string value(reinterpret_cast<const char*>(value_data), value_len);
  if (name == ":status") {
    stream->pending_status = std::atoi(value.c_str());  // nghttp2 has checked: three digits
  } else if (name[0] != ':') {
    stream->pending_headers.emplace_back(std::move(name), std::move(value));
  }
  return 0;
}

int on_data_chunk(nghttp2_session* session, uint8_t, int32_t stream_id, const uint8_t* data, size_t len,
                  void* user_data) {
  HubStream* stream = static_cast<State*>(user_data)->find(stream_id);
  if (stream != nullptr && !stream->cancelled) {
    std::lock_guard lock(stream->mu);
    if (stream->relay_chunks && stream->streamed) {
      // Acknowledged by relay() once the user's writer has taken it: the backpressure path.
      stream->chunks.emplace_back(reinterpret_cast<const char*>(data), len);
      stream->queued_bytes += len;
      stream->cv.notify_all();
      return 0;
    }
    if (stream->body.size() + len > stream->max_body) {
      // A hostile or broken agent: stop reading this response, keep the tunnel.
      stream->cancelled = true;
      if (stream->error.ok()) {
        stream->error = Status::resource_exhausted("the agent's response body exceeds " +
                                                   std::to_string(stream->max_body) + " bytes");
      }
      stream->body.clear();
      stream->cv.notify_all();
      nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, stream_id, NGHTTP2_CANCEL);
    } else {
      stream->body.append(reinterpret_cast<const char*>(data), len);
    }
  }
  nghttp2_session_consume(session, stream_id, len);
  return 0;
}

int on_frame_recv(nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
  auto* state = static_cast<State*>(user_data);
  if (frame->hd.type == NGHTTP2_PING) {
    if (frame->hd.flags & NGHTTP2_FLAG_ACK) state->on_ping_ack(frame->ping);
    return 0;
  }
  if (frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA) return 0;
  HubStream* stream = state->find(frame->hd.stream_id);
  if (stream == nullptr) return 0;
  std::lock_guard lock(stream->mu);
  if (frame->hd.type == NGHTTP2_HEADERS && !stream->headers_ready) {
    if (stream->pending_status >= 100 && stream->pending_status < 200) return 0;  // interim (1xx)
    stream->status = stream->pending_status;
    stream->headers = std::move(stream->pending_headers);
    for (const auto& [name, value] : stream->headers) {
      if (name == kStreamHeader) stream->streamed = true;
    }
    stream->headers_ready = true;
    stream->cv.notify_all();
  }
  if (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) {
    stream->finished = true;
    stream->cv.notify_all();
  }
  return 0;
}

int on_stream_close(nghttp2_session*, int32_t stream_id, uint32_t error_code, void* user_data) {
  auto* state = static_cast<State*>(user_data);
  const auto it = state->streams.find(stream_id);
  if (it == state->streams.end()) return 0;
  std::shared_ptr<HubStream> stream = std::move(it->second);
  state->streams.erase(it);
  std::lock_guard lock(stream->mu);
  if (!stream->finished && stream->error.ok()) {
    stream->error =
        Status::unavailable(std::string("stream reset by the agent (") + nghttp2_http2_strerror(error_code) + ")");
  }
  stream->cv.notify_all();
  return 0;
}

int on_frame_not_send(nghttp2_session*, const nghttp2_frame* frame, int error_code, void* user_data) {
  auto* state = static_cast<State*>(user_data);
  if (frame->hd.type != NGHTTP2_HEADERS) return 0;
  const auto it = state->streams.find(frame->hd.stream_id);
  if (it == state->streams.end()) return 0;
  // E.g. the agent sent GOAWAY before this request went out.
  fail(*it->second, Status::unavailable(std::string("request not sent: ") + nghttp2_strerror(error_code)));
  state->streams.erase(it);
  return 0;
}

Status client_gone() { return Status::unavailable("client gone: stream cancelled"); }

}  // namespace

bool State::submit(const std::shared_ptr<HubStream>& stream, net::HeaderList headers) {
  return loop->post([this, stream, headers = std::move(headers)](nghttp2_session* session) {
    if (session == nullptr) {
      fail(*stream, Status::unavailable("tunnel closed"));
      return;
    }
    const std::vector<nghttp2_nv> nv = make_nv(headers);
    nghttp2_data_provider provider{};
    provider.source.ptr = stream.get();
    provider.read_callback = read_hub_request_body;
    const bool has_body = !stream->request_body.empty();
    const int32_t id =
        nghttp2_submit_request(session, nullptr, nv.data(), nv.size(), has_body ? &provider : nullptr, nullptr);
    if (id < 0) {
      fail(*stream, Status::unavailable(std::string("cannot open a stream: ") + nghttp2_strerror(id)));
      return;
    }
    stream->id = id;
    streams[id] = stream;
  });
}

// Resets the stream (CANCEL) and gives back the flow-control credit of anything still queued.
void State::cancel(const std::shared_ptr<HubStream>& stream) {
  loop->post([stream](nghttp2_session* session) {
    if (session == nullptr || stream->id == 0) return;
    size_t dropped = 0;
    {
      std::lock_guard lock(stream->mu);
      stream->cancelled = true;
      dropped = stream->queued_bytes;
      stream->chunks.clear();
      stream->queued_bytes = 0;
    }
    // Also credits the connection window after the stream closed, which nghttp2 allows.
    if (dropped > 0) nghttp2_session_consume(session, stream->id, dropped);
    nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, stream->id, NGHTTP2_CANCEL);
  });
}

void State::consume(const std::shared_ptr<HubStream>& stream, size_t bytes) {
  loop->post([stream, bytes](nghttp2_session* session) {
    if (session != nullptr && stream->id != 0) nghttp2_session_consume(session, stream->id, bytes);
  });
}

// forward()'s relay loop, on the caller's thread: waits for what the I/O thread receives and
// passes it to `out`, acknowledging streamed data only after out.write() returned.
Status State::relay(HubStream& stream, const std::shared_ptr<HubStream>& ref, net::ResponseWriter& out,
                    bool* responded) {
  bool began = false;  // out.begin_stream() called
  auto last_gone_check = Clock::now();
  auto gone = [&] {
    if (responded != nullptr) *responded = began;
    cancel(ref);
    return client_gone();
  };
  std::unique_lock lock(stream.mu);
  for (;;) {
    if (!stream.error.ok()) {
      const size_t dropped = stream.queued_bytes;
      stream.chunks.clear();
      stream.queued_bytes = 0;
      Status error = stream.error;
      lock.unlock();
      if (dropped > 0) consume(ref, dropped);
      if (responded != nullptr) *responded = began;
      return error;
    }
    if (Clock::now() - last_gone_check >= kGonePoll) {
      lock.unlock();
      const bool user_left = out.client_gone();
      lock.lock();
      last_gone_check = Clock::now();
      if (user_left) return gone();
      continue;
    }
    if (stream.headers_ready && stream.streamed && !began) {
      std::string content_type;
      const net::HeaderList headers = relayed_headers(stream.headers, &content_type);
      const int status = stream.status;
      lock.unlock();
      began = true;
      const bool ok = out.begin_stream(status, content_type, headers);
      lock.lock();
      if (!ok) return gone();
      continue;
    }
    if (began && !stream.chunks.empty()) {
      const std::string chunk = std::move(stream.chunks.front());
      stream.chunks.pop_front();
      stream.queued_bytes -= chunk.size();
      lock.unlock();
      const bool ok = out.write(chunk);
      consume(ref, chunk.size());
      lock.lock();
      if (!ok) return gone();
      continue;
    }
    if (stream.finished && stream.headers_ready) {
      std::string content_type;
      const net::HeaderList headers = relayed_headers(stream.headers, &content_type);
      if (responded != nullptr) *responded = true;
      if (stream.streamed) {
        lock.unlock();
        out.end_stream();
      } else {
        const int status = stream.status;
        std::string body = std::move(stream.body);
        lock.unlock();
        out.send(status, content_type, std::move(body), headers);
      }
      return Status();
    }
    stream.cv.wait_for(lock, kGonePoll);
  }
}

bool State::tick(nghttp2_session* session, Clock::time_point now, Clock::time_point* wake, std::string* why) {
  if (ping_outstanding && options.ping_timeout.count() > 0) {
    // Any frame proves the agent alive; only silence with a PING outstanding is fatal.
    const Clock::time_point deadline = std::max(ping_sent, loop->last_recv()) + options.ping_timeout;
    if (now >= deadline) {
      *why = "ping timeout: nothing from the agent for " + std::to_string(options.ping_timeout.count()) + " ms";
      return false;
    }
    *wake = std::min(*wake, deadline);
  }
  if (ping_outstanding || options.ping_interval.count() <= 0) return true;
  if (now < next_ping) {
    *wake = std::min(*wake, next_ping);
    return true;
  }
  uint8_t opaque[8];
  ++ping_seq;
  std::memcpy(opaque, &ping_seq, sizeof(opaque));
  if (nghttp2_submit_ping(session, NGHTTP2_FLAG_NONE, opaque) == 0) {
    ping_outstanding = true;
    ping_sent = now;
    if (options.ping_timeout.count() > 0) *wake = std::min(*wake, now + options.ping_timeout);
  }
  return true;
}

void State::on_ping_ack(const nghttp2_ping& ping) {
  uint64_t seq = 0;
  std::memcpy(&seq, ping.opaque_data, sizeof(seq));
  if (!ping_outstanding || seq != ping_seq) return;  // not ours, or stale
  const Clock::time_point now = Clock::now();
  ping_outstanding = false;
  ping_rtt_us.store(std::chrono::duration_cast<std::chrono::microseconds>(now - ping_sent).count());
  next_ping = ping_sent + options.ping_interval;
}

void State::on_exit(const std::string& why) {
  for (auto& [id, stream] : streams) fail(*stream, Status::unavailable("tunnel closed: " + why));
  streams.clear();
  std::function<void()> callback;
  {
    std::lock_guard lock(close_mu);
    close_fired = true;
    callback = std::move(close_callback);
  }
  if (callback) callback();
}

Result<std::unique_ptr<TunnelClient>> TunnelClient::start(int fd, TunnelOptions options, std::string initial_bytes) {
  CS_ASSIGN_OR_RETURN(std::unique_ptr<H2Loop> loop, H2Loop::create(fd));
  auto state = std::make_unique<State>();
  state->options = options;
  state->loop = std::move(loop);

  H2Callbacks callbacks;
  callbacks.on_begin_headers = on_begin_headers;
  callbacks.on_header = on_header;
  callbacks.on_data_chunk = on_data_chunk;
  callbacks.on_frame_recv = on_frame_recv;
  callbacks.on_stream_close = on_stream_close;
  callbacks.on_frame_not_send = on_frame_not_send;
  CS_ASSIGN_OR_RETURN(nghttp2_session * session, new_h2_session(/*server=*/false, callbacks, state.get(), options));

  State* raw = state.get();
  H2Loop::Hooks hooks;
  hooks.tick = [raw](nghttp2_session* s, Clock::time_point now, Clock::time_point* wake, std::string* why) {
    return raw->tick(s, now, wake, why);
  };
  hooks.on_exit = [raw](const std::string& why) { raw->on_exit(why); };
  state->loop->start(session, std::move(initial_bytes), std::move(hooks));
  return std::unique_ptr<TunnelClient>(new TunnelClient(std::move(state)));
}

TunnelClient::TunnelClient(std::unique_ptr<State> state) : state_(std::move(state)) {}

TunnelClient::~TunnelClient() { close(); }

Status TunnelClient::forward(const net::HttpRequest& request, net::ResponseWriter& out, bool* responded) {
  if (responded != nullptr) *responded = false;
  auto stream = std::make_shared<HubStream>();
  stream->relay_chunks = true;
  stream->max_body = state_->options.max_response_body;
  stream->request_body = request.body;
  const std::string target = request.query.empty() ? request.path : request.path + "?" + request.query;
  const net::HeaderList in(request.headers.begin(), request.headers.end());
  if (!state_->submit(stream, hub_request_headers(request.method, target, in, request.body.size()))) {
    return Status::unavailable("tunnel closed: " + state_->loop->reason());
  }
  return state_->relay(*stream, stream, out, responded);
}

Result<TunnelResponse> TunnelClient::call(const std::string& method, const std::string& path, const std::string& body,
                                          std::chrono::milliseconds timeout, const net::HeaderList& headers) {
  auto stream = std::make_shared<HubStream>();
  stream->max_body = state_->options.max_call_body;
  stream->request_body = body;
  if (!state_->submit(stream, hub_request_headers(method, path, headers, body.size()))) {
    return Status::unavailable("tunnel closed: " + state_->loop->reason());
  }
  std::unique_lock lock(stream->mu);
  const bool done = stream->cv.wait_for(lock, timeout, [&] { return !stream->error.ok() || stream->finished; });
  if (!done) {
    lock.unlock();
    state_->cancel(stream);
    return Status::unavailable(method + " " + path + ": no response within " + std::to_string(timeout.count()) + " ms");
  }
  if (!stream->error.ok()) return stream->error.with_context(method + " " + path);
  TunnelResponse response;
  response.status = stream->status;
  for (auto& [name, value] : stream->headers) {
    if (name != kStreamHeader) response.headers.emplace_back(name, value);
  }
  response.body = std::move(stream->body);
  return response;
}

bool TunnelClient::closed() const { return state_->loop->ended(); }

std::string TunnelClient::close_reason() const { return state_->loop->reason(); }

void TunnelClient::close() { state_->loop->stop(); }

void TunnelClient::on_close(std::function<void()> callback) {
  {
    std::lock_guard lock(state_->close_mu);
    if (!state_->close_fired) {
      state_->close_callback = std::move(callback);
      return;
    }
  }
  if (callback) callback();
}

std::optional<std::chrono::microseconds> TunnelClient::last_ping_rtt() const {
  const int64_t us = state_->ping_rtt_us.load();
  if (us < 0) return std::nullopt;
  return std::chrono::microseconds(us);
}

}  // namespace cellserve::fleet
