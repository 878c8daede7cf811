#include "fleet/tunnel/tunnel_server.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <list>
#include <mutex>
#include <system_error>
#include <thread>
#include <unordered_map>

#include "fleet/tunnel/agent_stream.h"
#include "fleet/tunnel/h2_loop.h"
#include "fleet/tunnel/h2_session.h"

namespace cellserve::fleet {

struct TunnelServer::State {
  struct HandlerThread {
    std::thread thread;
    std::atomic<bool> done{false};
  };

  net::Handler handler;
  TunnelOptions options;
  std::unique_ptr<H2Loop> loop;

  // I/O thread only: the streams nghttp2 has open.
  std::unordered_map<int32_t, std::shared_ptr<AgentStream>> streams;

  std::mutex handlers_mu;  // guards handlers
  std::list<HandlerThread> handlers;
  std::atomic<int> finished_handlers{0};  // done but not yet joined

  AgentStream* find(int32_t id) {
    const auto it = streams.find(id);
    return it == streams.end() ? nullptr : it->second.get();
  }
  void dispatch(nghttp2_session* session, const std::shared_ptr<AgentStream>& stream);
  void run_handler(const std::shared_ptr<AgentStream>& stream);
  void reap_handlers(bool all);
  bool tick(H2Loop::Clock::time_point now, H2Loop::Clock::time_point* wake, std::string* why);
  void on_exit();
};

namespace {

using ServerState = TunnelServer::State;

int server_on_begin_headers(nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
  auto* state = static_cast<ServerState*>(user_data);
  if (frame->hd.type == NGHTTP2_HEADERS && frame->headers.cat == NGHTTP2_HCAT_REQUEST) {
    state->streams[frame->hd.stream_id] = std::make_shared<AgentStream>(frame->hd.stream_id);
  }
  return 0;
}

int server_on_header(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name_data, size_t name_len,
                     const uint8_t* value_data, size_t value_len, uint8_t, void* user_data) {
  auto* state = static_cast<ServerState*>(user_data);
  AgentStream* stream = state->find(frame->hd.stream_id);
  // Trailers (a second HEADERS block) are ignored.
  if (stream == nullptr || frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
  const std::string name(reinterpret_cast<const char*>(name_data), name_len);
  std::string value(reinterpret_cast<const char*>(value_data), value_len);
  net::HttpRequest& request = stream->request;
  if (name == ":method") {
    request.method = std::move(value);
  } else if (name == ":path") {
    const size_t q = value.find('?');
    request.path = value.substr(0, q);
    request.query = q == std::string::npos ? "" : value.substr(q + 1);
  } else if (name == ":authority") {
    request.headers["host"] = std::move(value);
  } else if (name[0] != ':') {
    // HTTP/1.1 semantics: repeated fields join with ", " (cookies with "; ", RFC 9113 §8.2.3).
    auto [it, inserted] = request.headers.try_emplace(name, value);
    if (!inserted) it->second += (name == "cookie" ? "; " : ", ") + value;
  }
  return 0;
}

int server_on_data_chunk(nghttp2_session* session, uint8_t, int32_t stream_id, const uint8_t* data, size_t len,
                         void* user_data) {
  auto* state = static_cast<ServerState*>(user_data);
  // Request bodies are buffered whole for the handler, bounded by max_request_body, so the
  // window is given back at once.
  nghttp2_session_consume(session, stream_id, len);
  AgentStream* stream = state->find(stream_id);
  if (stream == nullptr || stream->too_large) return 0;
  stream->body_bytes += len;
  if (stream->body_bytes > state->options.max_request_body) {
    stream->too_large = true;
    std::string().swap(stream->request.body);
    return 0;
  }
  stream->request.body.append(reinterpret_cast<const char*>(data), len);
  return 0;
}

int server_on_frame_recv(nghttp2_session* session, const nghttp2_frame* frame, void* user_data) {
  auto* state = static_cast<ServerState*>(user_data);
  const bool request_frame = frame->hd.type == NGHTTP2_HEADERS || frame->hd.type == NGHTTP2_DATA;
  if (!request_frame || (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) == 0) return 0;
  const auto it = state->streams.find(frame->hd.stream_id);
  if (it != state->streams.end() && !it->second->dispatched) state->dispatch(session, it->second);
  return 0;
}

int server_on_stream_close(nghttp2_session*, int32_t stream_id, uint32_t, void* user_data) {
  auto* state = static_cast<ServerState*>(user_data);
  const auto it = state->streams.find(stream_id);
  if (it == state->streams.end()) return 0;
  AgentStream& stream = *it->second;
  stream.closed = true;
  {
    std::lock_guard lock(stream.mu);
    stream.gone = true;  // a reset by the hub, or the response is complete: writes fail from now on
    stream.cv.notify_all();
  }
  state->streams.erase(it);
  return 0;
}

// Answers from the I/O thread, without a handler (413, 503).
void answer_directly(nghttp2_session* session, AgentStream* stream, int status, std::string body) {
  {
    std::lock_guard lock(stream->mu);
    stream->responded = true;
    stream->eof = true;
    stream->out = std::move(body);
  }
  const net::HeaderList headers =
      agent_response_headers(status, "text/plain", {}, static_cast<long long>(stream->out.size()));
  submit_agent_response(session, stream, headers, true);
}

}  // namespace

void ServerState::dispatch(nghttp2_session* session, const std::shared_ptr<AgentStream>& stream) {
  stream->dispatched = true;
  if (stream->too_large) {
    answer_directly(session, stream.get(), 413, "request body too large\n");
    return;
  }
  std::lock_guard lock(handlers_mu);
  HandlerThread& slot = handlers.emplace_back();
  try {
    slot.thread = std::thread([this, stream, &slot] {
      run_handler(stream);
      slot.done.store(true);
      finished_handlers.fetch_add(1);
    });
  } catch (const std::system_error&) {
    handlers.pop_back();  // out of threads: refuse this request rather than crash
    answer_directly(session, stream.get(), 503, "agent overloaded: cannot start a handler thread\n");
  }
}

void ServerState::run_handler(const std::shared_ptr<AgentStream>& stream) {
  AgentResponseWriter writer(loop.get(), stream, options.stream_window);
  try {
    handler(stream->request, writer);
    writer.finish();
  } catch (...) {
    // No exception crosses the tunnel: the hub sees a 500 or a reset stream.
    writer.abort();
  }
}

void ServerState::reap_handlers(bool all) {
  std::list<HandlerThread> finished;
  {
    std::lock_guard lock(handlers_mu);
    for (auto it = handlers.begin(); it != handlers.end();) {
      auto next = std::next(it);
      if (all || it->done.load()) {
        if (it->done.load()) finished_handlers.fetch_sub(1);
        finished.splice(finished.end(), handlers, it);
      }
      it = next;
    }
  }
  for (HandlerThread& h : finished) h.thread.join();
}

bool ServerState::tick(H2Loop::Clock::time_point now, H2Loop::Clock::time_point* wake, std::string* why) {
  if (finished_handlers.load() > 0) reap_handlers(false);
  if (options.ping_timeout.count() <= 0 || options.ping_interval.count() <= 0) return true;
  // The hub pings every ping_interval: silence for longer than that plus ping_timeout means the
  // hub (or the path to it) is gone even if TCP has not noticed.
  const auto limit = options.ping_interval + options.ping_timeout;
  const auto deadline = loop->last_recv() + limit;
  if (now >= deadline) {
    *why = "no frame from the hub for " + std::to_string(limit.count()) + " ms";
    return false;
  }
  *wake = std::min(*wake, deadline);
  return true;
}

void ServerState::on_exit() {
  for (auto& [id, stream] : streams) {
    stream->closed = true;
    std::lock_guard lock(stream->mu);
    stream->gone = true;
    stream->cv.notify_all();
  }
  streams.clear();
}

Result<std::unique_ptr<TunnelServer>> TunnelServer::start(int fd, net::Handler handler, TunnelOptions options,
                                                          std::string initial_bytes) {
  CS_ASSIGN_OR_RETURN(std::unique_ptr<H2Loop> loop, H2Loop::create(fd));
  auto state = std::make_unique<ServerState>();
  state->handler = std::move(handler);
  state->options = options;
  state->loop = std::move(loop);

  H2Callbacks callbacks;
  callbacks.on_begin_headers = server_on_begin_headers;
  callbacks.on_header = server_on_header;
  callbacks.on_data_chunk = server_on_data_chunk;
  callbacks.on_frame_recv = server_on_frame_recv;
  callbacks.on_stream_close = server_on_stream_close;
  CS_ASSIGN_OR_RETURN(nghttp2_session * session, new_h2_session(/*server=*/true, callbacks, state.get(), options));

  ServerState* raw = state.get();
  H2Loop::Hooks hooks;
  hooks.tick = [raw](nghttp2_session*, H2Loop::Clock::time_point now, H2Loop::Clock::time_point* wake,
                     std::string* why) { return raw->tick(now, wake, why); };
  hooks.on_exit = [raw](const std::string&) { raw->on_exit(); };
  state->loop->start(session, std::move(initial_bytes), std::move(hooks));
  return std::unique_ptr<TunnelServer>(new TunnelServer(std::move(state)));
}

TunnelServer::TunnelServer(std::unique_ptr<ServerState> state) : state_(std::move(state)) {}

TunnelServer::~TunnelServer() { close(); }

void TunnelServer::wait() { state_->loop->wait(); }

bool TunnelServer::closed() const { return state_->loop->ended(); }

std::string TunnelServer::close_reason() const { return state_->loop->reason(); }

void TunnelServer::close() {
  state_->loop->stop();  // on_exit() has marked every stream gone, so handlers finish
  state_->reap_handlers(true);
}

}  // namespace cellserve::fleet
