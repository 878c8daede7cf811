// Creating an nghttp2 session configured for the tunnel: manual flow control, our SETTINGS and
// the larger connection window, queued to go out first.
#pragma once

#include <nghttp2/nghttp2.h>

#include "base/status.h"
#include "fleet/tunnel/tunnel_options.h"

namespace cellserve::fleet {

// The nghttp2 callbacks a side uses (null: not needed). `user_data` reaches each of them.
struct H2Callbacks {
  nghttp2_on_begin_headers_callback on_begin_headers = nullptr;
  nghttp2_on_header_callback on_header = nullptr;
  nghttp2_on_data_chunk_recv_callback on_data_chunk = nullptr;
  nghttp2_on_frame_recv_callback on_frame_recv = nullptr;
  nghttp2_on_stream_close_callback on_stream_close = nullptr;
  nghttp2_on_frame_not_send_callback on_frame_not_send = nullptr;
};

// A new client (hub) or server (agent) session. Automatic WINDOW_UPDATE is off: the receiving code
// calls nghttp2_session_consume once data is delivered, which is what makes per-stream flow
// control real. SETTINGS (initial window = options.stream_window, max concurrent streams, no push)
// and the connection window (options.connection_window) are queued. The caller owns the session
// (nghttp2_session_del). Internal when nghttp2 fails (out of memory).
Result<nghttp2_session*> new_h2_session(bool server, const H2Callbacks& callbacks, void* user_data,
                                        const TunnelOptions& options);

}  // namespace cellserve::fleet
