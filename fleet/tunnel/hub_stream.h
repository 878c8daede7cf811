// One request stream on the hub side of the tunnel: the request body nghttp2 sends (I/O thread)
// and the response the I/O thread receives for the forward() or call() caller waiting on it.
#pragma once

#include <nghttp2/nghttp2.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>

#include "base/status.h"
#include "net/http_types.h"

namespace cellserve::fleet {

struct HubStream {
  // --- Set before submission, then I/O thread only.
  std::string request_body;
  size_t body_off = 0;        // sent so far
  bool relay_chunks = false;  // forward(): a streamed response's DATA is queued for the caller and
                              // acknowledged only after delivery; call(): acknowledged on arrival
  int32_t id = 0;             // 0 until submitted
  bool cancelled = false;     // RST_STREAM sent: further DATA is acknowledged at once
  int pending_status = 0;     // the HEADERS block being received
  net::HeaderList pending_headers;
  size_t pending_header_bytes = 0;  // names and values of pending_headers, bounded
  size_t max_body = 0;              // a whole (not relayed) response body larger than this fails the stream

  // --- Shared between the I/O thread and the caller.
  std::mutex mu;
  std::condition_variable cv;  // signalled on every change below
  bool headers_ready = false;  // the final response HEADERS arrived
  int status = 0;
  net::HeaderList headers;         // without pseudo-headers
  bool streamed = false;           // the agent used begin_stream() (kStreamHeader)
  std::deque<std::string> chunks;  // streamed DATA not yet given to the caller (relay_chunks)
  size_t queued_bytes = 0;         // sum of chunks' sizes
  std::string body;                // DATA of a response that is not relayed chunk by chunk
  bool finished = false;           // END_STREAM received
  Status error;                    // non-OK once the stream failed (reset, tunnel closed)
};

// nghttp2's data source callback for a HubStream's request body (source->ptr).
ssize_t read_hub_request_body(nghttp2_session* session, int32_t stream_id, uint8_t* buf, size_t length,
                              uint32_t* data_flags, nghttp2_data_source* source, void* user_data);

// The request header list: pseudo-headers, then `headers` without connection-specific fields,
// "host" (it becomes :authority) and "content-length" (recomputed from `body_size`).
net::HeaderList hub_request_headers(const std::string& method, const std::string& target,
                                    const net::HeaderList& headers, size_t body_size);

// A response's headers as relayed to the user: without the content type (returned separately
// through *content_type), content-length, kStreamHeader and connection-specific fields.
net::HeaderList relayed_headers(const net::HeaderList& headers, std::string* content_type);

}  // namespace cellserve::fleet
