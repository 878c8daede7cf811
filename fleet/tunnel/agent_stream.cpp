#include "fleet/tunnel/agent_stream.h"

#include <algorithm>
#include <cstring>

#include "fleet/tunnel/h2_headers.h"

namespace cellserve::fleet {

ssize_t read_agent_stream(nghttp2_session*, int32_t, uint8_t* buf, size_t length, uint32_t* data_flags,
                          nghttp2_data_source* source, void*) {
  auto* stream = static_cast<AgentStream*>(source->ptr);
  std::lock_guard lock(stream->mu);
  const size_t n = std::min(length, stream->pending());
  if (n > 0) {
    std::memcpy(buf, stream->out.data() + stream->out_off, n);
    stream->out_off += n;
    // Compact once the consumed prefix dominates, so a long stream does not grow the buffer.
    if (stream->out_off == stream->out.size()) {
      stream->out.clear();
      stream->out_off = 0;
    } else if (stream->out_off > (64u << 10) && stream->out_off * 2 > stream->out.size()) {
      stream->out.erase(0, stream->out_off);
      stream->out_off = 0;
    }
    stream->cv.notify_all();  // a write() may be waiting for room
  }
  if (stream->pending() == 0) {
    if (stream->eof) {
      *data_flags |= NGHTTP2_DATA_FLAG_EOF;
    } else if (n == 0) {
      return NGHTTP2_ERR_DEFERRED;  // resumed by the task request_resume() posts
    }
  }
  return static_cast<ssize_t>(n);
}

void submit_agent_response(nghttp2_session* session, AgentStream* stream, const net::HeaderList& headers,
                           bool with_body) {
  const std::vector<nghttp2_nv> nv = make_nv(headers);
  nghttp2_data_provider provider{};
  provider.source.ptr = stream;
  provider.read_callback = read_agent_stream;
  const int rv = nghttp2_submit_response(session, stream->id, nv.data(), nv.size(), with_body ? &provider : nullptr);
  if (rv != 0) {
    // Only on a programming error or out of memory; the handler must not wait forever.
    nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, stream->id, NGHTTP2_INTERNAL_ERROR);
    std::lock_guard lock(stream->mu);
    stream->gone = true;
    stream->cv.notify_all();
  }
}

net::HeaderList agent_response_headers(int status, std::string_view content_type, const net::HeaderList& extra,
                                       long long content_length) {
  // A handler cannot send an interim (1xx) response, and :status must be three digits.
  if (status < 200 || status > 999) status = 500;
  net::HeaderList headers = {{":status", std::to_string(status)}};
  if (!content_type.empty()) headers.emplace_back("content-type", std::string(content_type));
  // 204 and 304 carry no body and must not claim one (RFC 9110 §8.6); nghttp2 checks.
  if (status == 204 || status == 304) {
    if (content_length < 0) headers.emplace_back(std::string(kStreamHeader), "1");
  } else if (content_length >= 0) {
    headers.emplace_back("content-length", std::to_string(content_length));
  } else {
    headers.emplace_back(std::string(kStreamHeader), "1");
  }
  // The transport sets these from the arguments; a handler's own copy would contradict them.
  append_headers(extra, {"content-type", "content-length", kStreamHeader}, &headers);
  return headers;
}

void AgentResponseWriter::send(int status, std::string_view content_type, std::string body,
                               const net::HeaderList& headers) {
  net::HeaderList list = agent_response_headers(status, content_type, headers, static_cast<long long>(body.size()));
  // A response to HEAD keeps its Content-Length but carries no DATA (nghttp2 rejects any).
  const bool with_body = !body.empty() && !head_request();
  {
    std::lock_guard lock(stream_->mu);
    if (stream_->responded || stream_->gone) return;
    stream_->responded = true;
    stream_->out = std::move(body);
    stream_->out_off = 0;
    stream_->eof = true;
  }
  submit(std::move(list), with_body);
}

bool AgentResponseWriter::begin_stream(int status, std::string_view content_type, const net::HeaderList& headers) {
  net::HeaderList list = agent_response_headers(status, content_type, headers, -1);
  {
    std::lock_guard lock(stream_->mu);
    if (stream_->responded || stream_->gone) return false;
    stream_->responded = true;
    stream_->streamed = true;
  }
  submit(std::move(list), !head_request());
  return !client_gone();
}

bool AgentResponseWriter::write(std::string_view data) {
  std::unique_lock lock(stream_->mu);
  if (stream_->gone || !stream_->streamed || stream_->eof) return false;
  if (data.empty() || head_request()) return true;  // HEAD: the body is dropped
  stream_->out.append(data);
  request_resume(lock);
  // Backpressure: nghttp2 drains the buffer only as the hub's stream window allows, and the hub
  // acknowledges only what its user has taken. Blocking here bounds how far the handler leads.
  stream_->cv.wait(lock, [&] { return stream_->gone || stream_->pending() <= window_; });
  return !stream_->gone;
}

void AgentResponseWriter::end_stream() {
  std::unique_lock lock(stream_->mu);
  if (!stream_->streamed || stream_->eof) return;
  stream_->eof = true;
  request_resume(lock);
}

bool AgentResponseWriter::head_request() const { return stream_->request.method == "HEAD"; }

bool AgentResponseWriter::client_gone() {
  std::lock_guard lock(stream_->mu);
  return stream_->gone;
}

void AgentResponseWriter::finish() {
  bool responded = false;
  {
    std::lock_guard lock(stream_->mu);
    responded = stream_->responded;
  }
  if (!responded) {
    send(500, "text/plain", "handler sent no response\n");
  } else {
    end_stream();
  }
}

void AgentResponseWriter::abort() {
  bool responded = false;
  {
    std::lock_guard lock(stream_->mu);
    responded = stream_->responded;
  }
  if (!responded) {
    send(500, "text/plain", "handler failed\n");
    return;
  }
  // Part of the response is out: only a reset tells the hub that it is incomplete.
  std::shared_ptr<AgentStream> stream = stream_;
  loop_->post([stream](nghttp2_session* session) {
    if (session != nullptr && !stream->closed) {
      nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, stream->id, NGHTTP2_INTERNAL_ERROR);
    }
  });
}

void AgentResponseWriter::submit(net::HeaderList headers, bool with_body) {
  std::shared_ptr<AgentStream> stream = stream_;
  const bool posted = loop_->post([stream, headers = std::move(headers), with_body](nghttp2_session* session) {
    // A stream the hub already reset (or a tunnel that ended) takes no response.
    if (session == nullptr || stream->closed) return;
    submit_agent_response(session, stream.get(), headers, with_body);
  });
  if (!posted) {
    std::lock_guard lock(stream_->mu);
    stream_->gone = true;
  }
}

// Makes sure the I/O thread calls nghttp2_session_resume_data after this append. REQUIRES: lock
// holds stream_->mu.
void AgentResponseWriter::request_resume(std::unique_lock<std::mutex>& lock) {
  if (stream_->resume_posted) return;
  stream_->resume_posted = true;
  std::shared_ptr<AgentStream> stream = stream_;
  lock.unlock();
  const bool posted = loop_->post([stream](nghttp2_session* session) {
    {
      std::lock_guard inner(stream->mu);
      stream->resume_posted = false;
    }
    // Fails harmlessly (INVALID_ARGUMENT) when the data was not deferred.
    if (session != nullptr && !stream->closed) nghttp2_session_resume_data(session, stream->id);
  });
  lock.lock();
  if (!posted) {
    stream_->gone = true;
    stream_->cv.notify_all();
  }
}

}  // namespace cellserve::fleet
