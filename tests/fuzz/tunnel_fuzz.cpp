// libFuzzer target: the agent↔hub tunnel reading a hostile peer's HTTP/2 bytes.
//
// The seam. The tunnel's parsing of peer bytes is nghttp2 plus our callbacks (on_header,
// on_data_chunk, on_frame_recv, on_stream_close) and the state they drive (HubStream, relay(),
// AgentStream, the handler threads). Those callbacks are file-local and only make sense with a
// live session and open streams, and h2_headers.h only sees headers we produce, so the smallest
// seam that reaches them is the public class on a socketpair: the target plays the peer and
// writes the fuzz input as its half of the connection. The peer that matters most is the agent,
// which anyone may run and point at a hub, so the first input byte's bit 0 picks:
//   0: the hub side (TunnelClient). A request is sent first (forward(), or call() when bit 1 is
//      set) and the target waits until its HEADERS left the hub, so stream 1 exists; then it
//      writes an empty SETTINGS frame (the agent's connection preface) and the rest of the input
//      as the agent's frames. With bit 2 set the forward() writer fails its first write(), which
//      takes the cancel path.
//   1: the agent side (TunnelServer), whose peer is the hub: the client preface, an empty
//      SETTINGS frame, then the rest of the input; each request the bytes complete runs a handler
//      that answers (bit 1: streamed, in three writes).
// After the input the target half-closes its end, so every run ends with "peer closed the
// connection", and it reads everything the tunnel wrote until the tunnel closed its end.
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <thread>

#include "fleet/tunnel/tunnel_client.h"
#include "fleet/tunnel/tunnel_server.h"
#include "tests/support/fake_response_writer.h"

namespace {

using namespace cellserve;
using namespace cellserve::fleet;

constexpr int kPollMs = 2000;  // a tunnel that stays silent this long is a hang

constexpr std::string_view kClientPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
constexpr char kEmptySettings[] = {0, 0, 0, 4, 0, 0, 0, 0, 0};  // length 0, type SETTINGS, no flags, stream 0

TunnelOptions fuzz_options() {
  TunnelOptions o;
  o.stream_window = 4096;  // small windows, so the input can run into flow control
  o.connection_window = 16384;
  o.max_concurrent_streams = 8;
  o.ping_interval = std::chrono::milliseconds(60'000);
  o.ping_timeout = std::chrono::milliseconds(0);  // no timers: runs end by the input alone
  o.max_request_body = 1024;
  return o;
}

void write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n <= 0) return;  // the tunnel closed its end (e.g. a protocol error)
    data.remove_prefix(static_cast<size_t>(n));
  }
}

// Reads from `fd` until EOF; aborts when nothing arrives for kPollMs (the tunnel hangs).
void drain(int fd) {
  char buf[4096];
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, kPollMs) == 0) {
      std::fprintf(stderr, "the tunnel neither wrote nor closed for %d ms\n", kPollMs);
      std::abort();
    }
    if (::recv(fd, buf, sizeof buf, 0) <= 0) return;
  }
}

// Reads the hub's frames from `fd` until a HEADERS frame (type 1) has passed: the request is out.
void await_request_headers(int fd) {
  std::string in;
  size_t pos = kClientPreface.size();
  char buf[4096];
  for (;;) {
    while (in.size() >= pos + 9) {
      const auto* h = reinterpret_cast<const uint8_t*>(in.data() + pos);
      const size_t length = (size_t{h[0]} << 16) | (size_t{h[1]} << 8) | h[2];
      if (h[3] == 1) return;
      pos += 9 + length;
    }
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, kPollMs) == 0) {
      std::fprintf(stderr, "the hub did not send its request within %d ms\n", kPollMs);
      std::abort();
    }
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return;
    in.append(buf, static_cast<size_t>(n));
  }
}

void fuzz_hub_side(uint8_t mode, std::string_view frames) {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) std::abort();
  auto client = TunnelClient::start(fds[0], fuzz_options());
  if (!client.ok()) std::abort();
  std::thread request([&] {
    if (mode & 2) {
      (void)(*client)->call("GET", "/health", "", std::chrono::milliseconds(10'000));
    } else {
      net::HttpRequest r;
      r.method = "POST";
      r.path = "/v1/chat/completions";
      r.headers["host"] = "hub";
      r.headers["content-type"] = "application/json";
      r.body = R"({"messages":[]})";
      cellserve::testing::FakeResponseWriter out;
      out.refuse_writes = (mode & 4) != 0;
      bool responded = false;
      (void)(*client)->forward(r, out, &responded);
    }
  });
  await_request_headers(fds[1]);
  write_all(fds[1], std::string_view(kEmptySettings, sizeof kEmptySettings));
  write_all(fds[1], frames);
  ::shutdown(fds[1], SHUT_WR);
  drain(fds[1]);
  request.join();
  client->reset();
  ::close(fds[1]);
}

void fuzz_agent_side(uint8_t mode, std::string_view frames) {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) std::abort();
  const bool streamed = (mode & 2) != 0;
  net::Handler handler = [streamed](const net::HttpRequest& request, net::ResponseWriter& out) {
    if (!streamed) {
      out.send(200, "text/plain", request.method + " " + request.path + " " + std::to_string(request.body.size()),
               {{"x-echo", request.query}});
      return;
    }
    if (!out.begin_stream(200, "text/event-stream")) return;
    for (int i = 0; i < 3; ++i) {
      if (!out.write("data: " + std::to_string(i) + "\n\n")) return;
    }
    out.end_stream();
  };
  std::string initial(kClientPreface);
  initial.append(kEmptySettings, sizeof kEmptySettings);
  initial.append(frames);
  auto server = TunnelServer::start(fds[0], handler, fuzz_options(), std::move(initial));
  if (!server.ok()) std::abort();
  ::shutdown(fds[1], SHUT_WR);
  drain(fds[1]);
  (*server)->wait();
  server->reset();
  ::close(fds[1]);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t mode = data[0];
  const std::string_view frames(reinterpret_cast<const char*>(data + 1), size - 1);
  if (mode & 1) {
    fuzz_agent_side(mode, frames);
  } else {
    fuzz_hub_side(mode, frames);
  }
  return 0;
}
