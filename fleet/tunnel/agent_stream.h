// One request stream on the agent side of the tunnel: the request as it arrives (I/O thread),
// then the response the handler writes (handler thread) and nghttp2 drains (I/O thread).
#pragma once

#include <nghttp2/nghttp2.h>

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "fleet/tunnel/h2_loop.h"
#include "net/http_types.h"

namespace cellserve::fleet {

struct AgentStream {
  explicit AgentStream(int32_t stream_id) : id(stream_id) {}

  const int32_t id;

  // --- I/O thread only; the request is read-only for the handler once it runs.
  net::HttpRequest request;
  size_t body_bytes = 0;    // received, including what was dropped past the limit
  bool too_large = false;   // body_bytes passed max_request_body: answered 413
  bool dispatched = false;  // the request is complete and answered or handed to a handler
  bool closed = false;      // nghttp2 closed the stream: nothing may be submitted on it

  // --- Shared between the handler thread and the I/O thread.
  std::mutex mu;
  std::condition_variable cv;  // signalled when `out` drains or `gone` turns true
  std::string out;             // response body bytes not yet taken by nghttp2, from out_off
  size_t out_off = 0;
  bool responded = false;      // send() or begin_stream() happened
  bool streamed = false;       // begin_stream()
  bool eof = false;            // no more bytes will be appended to `out`
  bool gone = false;           // reset by the hub, or the tunnel closed
  bool resume_posted = false;  // a resume task is queued for the I/O thread

  size_t pending() const { return out.size() - out_off; }  // REQUIRES: mu held
};

// nghttp2's data source callback for an AgentStream (source->ptr): copies buffered bytes,
// NGHTTP2_ERR_DEFERRED while the buffer is empty and the handler may still write.
ssize_t read_agent_stream(nghttp2_session* session, int32_t stream_id, uint8_t* buf, size_t length,
                          uint32_t* data_flags, nghttp2_data_source* source, void* user_data);

// Submits a response on `stream` from the I/O thread, its body drained from stream->out.
// No body (and END_STREAM on the HEADERS frame) when `with_body` is false.
void submit_agent_response(nghttp2_session* session, AgentStream* stream, const net::HeaderList& headers,
                           bool with_body);

// The ResponseWriter a handler gets: appends to the stream's buffer and wakes the I/O thread.
// write() blocks while more than `window` bytes wait in the buffer, so a generator cannot outrun
// a slow user. Used by one handler thread.
class AgentResponseWriter : public net::ResponseWriter {
 public:
  AgentResponseWriter(H2Loop* loop, std::shared_ptr<AgentStream> stream, size_t window)
      : loop_(loop), stream_(std::move(stream)), window_(window) {}

  void send(int status, std::string_view content_type, std::string body, const net::HeaderList& headers = {}) override;
  bool begin_stream(int status, std::string_view content_type, const net::HeaderList& headers = {}) override;
  bool write(std::string_view data) override;
  void end_stream() override;
  // A broken stream is reset, so the hub (and its user) see that it is incomplete.
  void abort_stream() override { abort(); }
  bool client_gone() override;

  // After the handler returned: answers 500 when it sent nothing, ends a stream it left open.
  void finish();
  // After the handler threw: 500 when nothing was sent yet, else the stream is reset.
  void abort();

 private:
  bool head_request() const;  // no DATA may follow the response HEADERS
  void submit(net::HeaderList headers, bool with_body);
  void request_resume(std::unique_lock<std::mutex>& lock);

  H2Loop* const loop_;
  const std::shared_ptr<AgentStream> stream_;
  const size_t window_;
};

// The response header list for a status, content type and handler headers (normalized, without
// connection-specific fields). `content_length` < 0: none (a streamed response, marked with
// kStreamHeader).
net::HeaderList agent_response_headers(int status, std::string_view content_type, const net::HeaderList& extra,
                                       long long content_length);

}  // namespace cellserve::fleet
