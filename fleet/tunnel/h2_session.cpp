#include "fleet/tunnel/h2_session.h"

#include <algorithm>
#include <iterator>
#include <string>

namespace cellserve::fleet {
namespace {

// HTTP/2 windows are 31-bit (RFC 9113 §6.9.1).
constexpr uint32_t kMaxWindow = (1u << 31) - 1;

Status nghttp2_error(const char* what, int rv) {
  return Status::internal(std::string("tunnel: ") + what + ": " + nghttp2_strerror(rv));
}

}  // namespace

Result<nghttp2_session*> new_h2_session(bool server, const H2Callbacks& callbacks, void* user_data,
                                        const TunnelOptions& options) {
  nghttp2_session_callbacks* cbs = nullptr;
  int rv = nghttp2_session_callbacks_new(&cbs);
  if (rv != 0) return nghttp2_error("callbacks", rv);
  if (callbacks.on_begin_headers)
    nghttp2_session_callbacks_set_on_begin_headers_callback(cbs, callbacks.on_begin_headers);
  if (callbacks.on_header) nghttp2_session_callbacks_set_on_header_callback(cbs, callbacks.on_header);
  if (callbacks.on_data_chunk) nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, callbacks.on_data_chunk);
  if (callbacks.on_frame_recv) nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, callbacks.on_frame_recv);
  if (callbacks.on_stream_close) nghttp2_session_callbacks_set_on_stream_close_callback(cbs, callbacks.on_stream_close);
  if (callbacks.on_frame_not_send) {
    nghttp2_session_callbacks_set_on_frame_not_send_callback(cbs, callbacks.on_frame_not_send);
  }

  nghttp2_option* opt = nullptr;
  rv = nghttp2_option_new(&opt);
  if (rv != 0) {
    nghttp2_session_callbacks_del(cbs);
    return nghttp2_error("options", rv);
  }
  nghttp2_option_set_no_auto_window_update(opt, 1);

  nghttp2_session* session = nullptr;
  rv = server ? nghttp2_session_server_new2(&session, cbs, user_data, opt)
              : nghttp2_session_client_new2(&session, cbs, user_data, opt);
  nghttp2_option_del(opt);
  nghttp2_session_callbacks_del(cbs);
  if (rv != 0) return nghttp2_error("session", rv);

  const uint32_t stream_window = std::clamp<uint32_t>(options.stream_window, 1, kMaxWindow);
  const uint32_t connection_window = std::clamp<uint32_t>(options.connection_window, 65535, kMaxWindow);
  const nghttp2_settings_entry settings[] = {
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, stream_window},
      {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, std::max<uint32_t>(options.max_concurrent_streams, 1)},
      {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
  };
  rv = nghttp2_submit_settings(session, NGHTTP2_FLAG_NONE, settings, std::size(settings));
  if (rv == 0) {
    rv = nghttp2_session_set_local_window_size(session, NGHTTP2_FLAG_NONE, 0, static_cast<int32_t>(connection_window));
  }
  if (rv != 0) {
    nghttp2_session_del(session);
    return nghttp2_error("settings", rv);
  }
  return session;
}

}  // namespace cellserve::fleet
