// The agent↔hub tunnel over a socketpair: a TunnelServer (agent) on one end, a TunnelClient (hub)
// or a raw socket playing a broken peer on the other. Waits use generous deadlines so that a bug
// fails a test instead of hanging it; no test asserts how long anything took.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <future>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "fleet/hub/relay_writer.h"
#include "fleet/tunnel/tunnel_client.h"
#include "fleet/tunnel/tunnel_server.h"
#include "tests/support/fake_response_writer.h"

namespace cellserve::fleet {
namespace {

using namespace std::chrono_literals;
using net::HeaderList;
using net::HttpRequest;
using net::ResponseWriter;
using testing::FakeResponseWriter;  // what the hub relayed to its user

// Polls `pred` until it holds or `limit` passes.
bool wait_until(const std::function<bool()>& pred, std::chrono::milliseconds limit = 5000ms) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(2ms);
  }
  return true;
}

// A one-shot event with a bounded wait.
class Event {
 public:
  void notify() {
    std::lock_guard lock(mu_);
    set_ = true;
    cv_.notify_all();
  }
  bool wait(std::chrono::milliseconds limit = 5000ms) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, limit, [&] { return set_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool set_ = false;
};

std::string pattern(size_t size, uint32_t seed) {
  std::string s(size, '\0');
  std::mt19937 rng(seed);
  for (char& c : s) c = static_cast<char>('a' + rng() % 26);
  return s;
}

std::string header_value(const HeaderList& headers, const std::string& name) {
  for (const auto& [n, v] : headers) {
    if (n == name) return v;
  }
  return "<absent>";
}

// An agent and a hub joined by a socketpair. Declare it after everything its handler uses.
struct TunnelPair {
  explicit TunnelPair(net::Handler handler, TunnelOptions options = {}) {
    int fds[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
    agent_fd = fds[0];
    auto s = TunnelServer::start(fds[0], std::move(handler), options);
    auto c = TunnelClient::start(fds[1], options);
    EXPECT_TRUE(s.ok() && c.ok());
    server = std::move(s).value();
    client = std::move(c).value();
  }
  ~TunnelPair() {
    client.reset();
    server.reset();
  }
  int agent_fd = -1;  // owned by `server`; for tests that cut the connection under it
  std::unique_ptr<TunnelServer> server;
  std::unique_ptr<TunnelClient> client;
};

// A raw socket peer: one end is returned to the test, the other goes to the tunnel under test.
struct RawPeer {
  RawPeer() { EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0); }
  ~RawPeer() {
    if (fds[0] >= 0) ::close(fds[0]);
  }
  int take_tunnel_end() {
    const int fd = fds[1];
    fds[1] = -1;
    return fd;
  }
  void send_bytes(const std::string& data) { (void)::send(fds[0], data.data(), data.size(), MSG_NOSIGNAL); }
  int fds[2] = {-1, -1};
};

HttpRequest make_request(const std::string& method, const std::string& path, std::string body = {}) {
  HttpRequest request;
  request.method = method;
  request.path = path;
  request.body = std::move(body);
  return request;
}

TEST(Tunnel, RoundTripRequestAndWholeResponse) {
  const std::string request_body = pattern(1 << 20, 1);
  const std::string response_body = pattern(3 << 20, 2);
  std::mutex mu;
  HttpRequest seen;
  TunnelPair pair([&](const HttpRequest& request, ResponseWriter& out) {
    {
      std::lock_guard lock(mu);
      seen = request;
    }
    if (request.path == "/busy") {
      out.send(429, "application/json", "{\"error\":\"busy\"}", {{"Retry-After", "7"}});
      return;
    }
    out.send(200, "application/octet-stream", response_body, {{"X-Agent", "a1"}, {"Connection", "close"}});
  });

  HttpRequest request = make_request("POST", "/v1/chat/completions", request_body);
  request.query = "stream=false&n=2";
  request.headers = {{"authorization", "Bearer sk-test"},
                     {"content-type", "application/json"},
                     {"host", "hub.example:443"},
                     {"connection", "keep-alive"},
                     {"content-length", std::to_string(request_body.size())}};
  FakeResponseWriter out;
  bool responded = false;
  const Status status = pair.client->forward(request, out, &responded);
  ASSERT_TRUE(status.ok()) << status.to_string();
  EXPECT_TRUE(responded);
  {
    std::lock_guard lock(mu);
    EXPECT_EQ(seen.method, "POST");
    EXPECT_EQ(seen.path, "/v1/chat/completions");
    EXPECT_EQ(seen.query, "stream=false&n=2");
    EXPECT_EQ(seen.header("authorization"), "Bearer sk-test");
    EXPECT_EQ(seen.header("content-type"), "application/json");
    EXPECT_EQ(seen.header("host"), "hub.example:443");
    EXPECT_EQ(seen.headers.count("connection"), 0u);
    EXPECT_TRUE(seen.body == request_body);
  }
  EXPECT_EQ(out.snapshot().sends, 1);
  EXPECT_EQ(out.snapshot().begins, 0);
  EXPECT_EQ(out.snapshot().status, 200);
  EXPECT_EQ(out.snapshot().content_type, "application/octet-stream");
  EXPECT_TRUE(out.snapshot().body == response_body);
  EXPECT_EQ(header_value(out.snapshot().headers, "x-agent"), "a1");
  EXPECT_EQ(header_value(out.snapshot().headers, "connection"), "<absent>");
  EXPECT_EQ(header_value(out.snapshot().headers, "content-length"), "<absent>");
  EXPECT_EQ(header_value(out.snapshot().headers, "x-cellserve-stream"), "<absent>");

  FakeResponseWriter busy;
  ASSERT_TRUE(pair.client->forward(make_request("GET", "/busy"), busy).ok());
  EXPECT_EQ(busy.snapshot().status, 429);
  EXPECT_EQ(busy.snapshot().body, "{\"error\":\"busy\"}");
  EXPECT_EQ(header_value(busy.snapshot().headers, "retry-after"), "7");
  std::lock_guard lock(mu);
  EXPECT_EQ(seen.method, "GET");
  EXPECT_TRUE(seen.body.empty());
}

TEST(Tunnel, StreamedResponseArrivesChunkByChunk) {
  Event go;
  std::atomic<bool> handler_done{false};
  TunnelPair pair([&](const HttpRequest&, ResponseWriter& out) {
    ASSERT_TRUE(out.begin_stream(200, "text/event-stream", {{"cache-control", "no-cache"}}));
    EXPECT_TRUE(out.write("data: 1\n\n"));
    go.wait();
    EXPECT_TRUE(out.write("data: 2\n\n"));
    EXPECT_TRUE(out.write("data: [DONE]\n\n"));
    out.end_stream();
    handler_done = true;
  });
  FakeResponseWriter out;
  auto result = std::async(std::launch::async, [&] { return pair.client->forward(make_request("POST", "/s"), out); });
  ASSERT_TRUE(wait_until([&] { return out.snapshot().writes.size() == 1; }));
  EXPECT_FALSE(handler_done);  // the first chunk came while the handler was still running
  EXPECT_EQ(out.snapshot().begins, 1);
  EXPECT_EQ(out.snapshot().status, 200);
  EXPECT_EQ(out.snapshot().content_type, "text/event-stream");
  EXPECT_EQ(header_value(out.snapshot().headers, "cache-control"), "no-cache");
  EXPECT_EQ(header_value(out.snapshot().headers, "x-cellserve-stream"), "<absent>");
  go.notify();
  ASSERT_EQ(result.wait_for(5s), std::future_status::ready);
  EXPECT_TRUE(result.get().ok());
  EXPECT_EQ(out.snapshot().body, "data: 1\n\ndata: 2\n\ndata: [DONE]\n\n");
  EXPECT_EQ(out.snapshot().writes.front(), "data: 1\n\n");
  EXPECT_EQ(out.snapshot().ends, 1);
  EXPECT_EQ(out.snapshot().sends, 0);
}

TEST(Tunnel, SixtyFourConcurrentForwards) {
  TunnelPair pair([](const HttpRequest& request, ResponseWriter& out) {
    const int i = std::stoi(request.path.substr(3));
    const std::string body = request.body + ":" + pattern(1000 + 517 * i, i);
    if (i % 2 == 0) {
      out.send(200, "text/plain", body);
      return;
    }
    out.begin_stream(200, "text/plain");
    for (size_t off = 0; off < body.size(); off += 700) out.write(std::string_view(body).substr(off, 700));
    out.end_stream();
  });
  constexpr int kThreads = 64;
  std::vector<FakeResponseWriter> outs(kThreads);
  std::vector<Status> results(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      results[i] =
          pair.client->forward(make_request("POST", "/r/" + std::to_string(i), "req" + std::to_string(i)), outs[i]);
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < kThreads; ++i) {
    EXPECT_TRUE(results[i].ok()) << i << ": " << results[i].to_string();
    EXPECT_TRUE(outs[i].snapshot().body == "req" + std::to_string(i) + ":" + pattern(1000 + 517 * i, i)) << i;
    EXPECT_EQ(i % 2 == 0 ? outs[i].snapshot().sends : outs[i].snapshot().begins, 1) << i;
  }
}

TEST(Tunnel, SlowUserStallsOnlyItsOwnStream) {
  TunnelOptions options;  // default windows: 256 KiB per stream
  constexpr size_t kTotal = 20 << 20;
  constexpr size_t kChunk = 64 << 10;
  std::atomic<size_t> produced{0};  // bytes the slow handler's write() accepted
  std::atomic<size_t> max_lead{0};
  FakeResponseWriter slow;
  auto note_lead = [&] {
    const size_t p = produced.load(), d = slow.delivered.load();
    const size_t lead = p > d ? p - d : 0;
    size_t seen = max_lead.load();
    while (lead > seen && !max_lead.compare_exchange_weak(seen, lead)) {}
  };
  TunnelPair pair(
      [&](const HttpRequest& request, ResponseWriter& out) {
        if (request.path != "/slow") {
          out.send(200, "text/plain", "quick " + request.path);
          return;
        }
        out.begin_stream(200, "application/octet-stream");
        const std::string chunk(kChunk, 'z');
        for (size_t sent = 0; sent < kTotal; sent += kChunk) {
          if (!out.write(chunk)) return;
          produced += kChunk;
          note_lead();
        }
        out.end_stream();
      },
      options);
  slow.write_delay = 20ms;
  slow.on_write = [&](std::string_view) { note_lead(); };
  auto result =
      std::async(std::launch::async, [&] { return pair.client->forward(make_request("GET", "/slow"), slow); });
  // Let the handler run as far ahead as it can get.
  ASSERT_TRUE(wait_until([&] { return produced.load() >= slow.delivered.load() + options.stream_window; }));
  // Other requests are not held up by the stalled stream.
  for (int i = 0; i < 8; ++i) {
    FakeResponseWriter quick;
    ASSERT_TRUE(pair.client->forward(make_request("GET", "/q" + std::to_string(i)), quick).ok());
    EXPECT_EQ(quick.snapshot().body, "quick /q" + std::to_string(i));
    auto called = pair.client->call("GET", "/status", "", 5000ms);
    ASSERT_TRUE(called.ok()) << called.status().to_string();
  }
  slow.write_delay = 0ms;  // the user speeds up: the rest flows
  ASSERT_EQ(result.wait_for(20s), std::future_status::ready);
  EXPECT_TRUE(result.get().ok());
  EXPECT_EQ(slow.delivered.load(), kTotal);
  // Unacknowledged bytes are bounded: the agent's buffer (stream_window) plus the hub's window
  // (stream_window), plus one chunk and frame slack.
  RecordProperty("max_lead", std::to_string(max_lead.load()));
  EXPECT_LE(max_lead.load(), 2 * options.stream_window + kChunk + (16 << 10));
  EXPECT_GE(max_lead.load(), options.stream_window);
}

TEST(Tunnel, UserGoneCancelsTheAgentsHandler) {
  std::atomic<bool> writer_saw_false{false}, poller_saw_gone{false};
  TunnelPair pair([&](const HttpRequest& request, ResponseWriter& out) {
    if (request.path == "/after") {
      out.send(200, "text/plain", "fine");
      return;
    }
    out.begin_stream(200, "text/event-stream");
    if (request.path == "/writes") {
      // Keeps writing: a write() eventually fails.
      for (int i = 0; i < 5000 && !out.client_gone(); ++i) {
        if (!out.write("data: tick\n\n")) break;
        std::this_thread::sleep_for(1ms);
      }
      writer_saw_false = !out.write("x") && out.client_gone();
      return;
    }
    // Only polls, writing nothing after the first chunk: the hub must notice the user left by
    // itself and reset the stream.
    out.write("data: first\n\n");
    poller_saw_gone = wait_until([&] { return out.client_gone(); });
  });

  FakeResponseWriter out;
  out.on_write = [&](std::string_view) {
    if (out.snapshot().writes.size() >= 3) out.gone = true;
  };
  bool responded = false;
  const Status status = pair.client->forward(make_request("GET", "/writes"), out, &responded);
  EXPECT_EQ(status.code(), StatusCode::Unavailable);
  EXPECT_NE(status.message().find("client gone"), std::string::npos) << status.to_string();
  EXPECT_TRUE(responded);
  EXPECT_TRUE(wait_until([&] { return writer_saw_false.load(); }));

  FakeResponseWriter idle;
  idle.on_write = [&](std::string_view) { idle.gone = true; };  // gone right after the first chunk
  EXPECT_EQ(pair.client->forward(make_request("GET", "/polls"), idle).code(), StatusCode::Unavailable);
  EXPECT_TRUE(wait_until([&] { return poller_saw_gone.load(); }));
  // The tunnel itself is fine.
  auto called = pair.client->call("GET", "/after", "", 5000ms);
  ASSERT_TRUE(called.ok()) << called.status().to_string();
  EXPECT_EQ(called->body, "fine");
  EXPECT_FALSE(pair.client->closed());
}

TEST(Tunnel, AgentSideDropFailsForwardsAndCalls) {
  std::atomic<int> handlers_started{0}, handlers_saw_gone{0};
  TunnelPair pair([&](const HttpRequest& request, ResponseWriter& out) {
    ++handlers_started;
    if (request.path == "/stream") {
      out.begin_stream(200, "text/event-stream");
      out.write("data: 1\n\n");
    }
    if (wait_until([&] { return out.client_gone(); })) ++handlers_saw_gone;
  });
  std::atomic<bool> on_close_fired{false};
  pair.client->on_close([&] { on_close_fired = true; });

  auto pending_call = std::async(std::launch::async, [&] { return pair.client->call("GET", "/hang", "", 10000ms); });
  FakeResponseWriter out;
  bool responded = false;
  auto forwarded = std::async(std::launch::async,
                              [&] { return pair.client->forward(make_request("GET", "/stream"), out, &responded); });
  ASSERT_TRUE(wait_until([&] { return !out.snapshot().writes.empty() && handlers_started.load() == 2; }));
  // Cut the connection under the agent (no GOAWAY), then close the agent.
  ::shutdown(pair.agent_fd, SHUT_RDWR);
  ASSERT_EQ(forwarded.wait_for(5s), std::future_status::ready);
  const Status status = forwarded.get();
  EXPECT_EQ(status.code(), StatusCode::Unavailable);
  EXPECT_NE(status.message().find("tunnel closed"), std::string::npos) << status.to_string();
  EXPECT_TRUE(responded);
  ASSERT_EQ(pending_call.wait_for(5s), std::future_status::ready);
  EXPECT_EQ(pending_call.get().status().code(), StatusCode::Unavailable);
  EXPECT_TRUE(pair.client->closed());
  EXPECT_TRUE(wait_until([&] { return on_close_fired.load(); }));
  pair.server->close();
  EXPECT_EQ(handlers_saw_gone.load(), 2);
  // After the close: immediate failures, nothing sent.
  FakeResponseWriter late;
  EXPECT_EQ(pair.client->forward(make_request("GET", "/late"), late, &responded).code(), StatusCode::Unavailable);
  EXPECT_FALSE(responded);
  EXPECT_EQ(pair.client->call("GET", "/late", "", 1000ms).status().code(), StatusCode::Unavailable);
  bool late_callback = false;
  pair.client->on_close([&] { late_callback = true; });
  EXPECT_TRUE(late_callback);
}

TEST(Tunnel, AgentCloseMidStreamFailsTheForward) {
  std::atomic<bool> saw_gone{false};
  TunnelPair pair([&](const HttpRequest&, ResponseWriter& out) {
    out.begin_stream(200, "text/event-stream");
    out.write("data: 1\n\n");
    saw_gone = wait_until([&] { return out.client_gone(); });
  });
  FakeResponseWriter out;
  auto forwarded = std::async(std::launch::async, [&] { return pair.client->forward(make_request("GET", "/"), out); });
  ASSERT_TRUE(wait_until([&] { return !out.snapshot().writes.empty(); }));
  pair.server->close();  // GOAWAY, then the socket closes; returns once the handler has returned
  EXPECT_TRUE(saw_gone.load());
  ASSERT_EQ(forwarded.wait_for(5s), std::future_status::ready);
  EXPECT_EQ(forwarded.get().code(), StatusCode::Unavailable);
  EXPECT_TRUE(wait_until([&] { return pair.client->closed(); }));
}

// The regression for unbounded hub memory: an agent (any self-made identity can be one) answered
// with an endless body and the hub buffered it all. Whole responses are bounded; beyond the
// bound the stream is reset, the caller gets ResourceExhausted, and the tunnel lives on.
TEST(Tunnel, AgentResponsesBeyondTheLimitsFailOnlyTheirStream) {
  TunnelOptions options;
  options.max_call_body = 64 << 10;
  options.max_response_body = 256 << 10;
  TunnelPair pair(
      [](const HttpRequest& request, ResponseWriter& out) {
        if (request.path == "/small") return out.send(200, "text/plain", "ok");
        out.send(200, "application/json", std::string(1 << 20, 'x'));
      },
      options);
  auto called = pair.client->call("GET", "/agent/info", "", 5000ms);
  ASSERT_FALSE(called.ok());
  EXPECT_EQ(called.status().code(), StatusCode::ResourceExhausted);
  EXPECT_NE(called.status().message().find("65536 bytes"), std::string::npos) << called.status().to_string();
  FakeResponseWriter out;
  bool responded = true;
  const Status forwarded = pair.client->forward(make_request("GET", "/big"), out, &responded);
  EXPECT_EQ(forwarded.code(), StatusCode::ResourceExhausted) << forwarded.to_string();
  EXPECT_FALSE(responded);
  auto small = pair.client->call("GET", "/small", "", 5000ms);
  ASSERT_TRUE(small.ok()) << small.status().to_string();
  EXPECT_EQ(small->body, "ok");
  EXPECT_FALSE(pair.client->closed());
}

// The regression for silent truncation: when the device died mid-stream, the user's SSE response
// ended with a clean final chunk. The hub's relay writer now ends it with an error event and
// [DONE]; here the agent closes mid-stream under a real tunnel.
TEST(Tunnel, AStreamBrokenMidAnswerEndsWithAnErrorEventThroughTheHubsRelay) {
  TunnelPair pair([&](const HttpRequest&, ResponseWriter& out) {
    out.begin_stream(200, "text/event-stream");
    out.write("data: {\"choices\":[]}\n\n");
    wait_until([&] { return out.client_gone(); });
  });
  FakeResponseWriter user;
  RelayWriter relay(user);
  bool responded = false;
  auto forwarded =
      std::async(std::launch::async, [&] { return pair.client->forward(make_request("GET", "/"), relay, &responded); });
  ASSERT_TRUE(wait_until([&] { return !user.snapshot().writes.empty(); }));
  pair.server->close();
  ASSERT_EQ(forwarded.wait_for(5s), std::future_status::ready);
  const Status status = forwarded.get();
  ASSERT_FALSE(status.ok());
  EXPECT_TRUE(responded);
  relay.end_broken(status);
  const std::vector<std::string> chunks = user.snapshot().writes;
  ASSERT_GE(chunks.size(), 3u);
  EXPECT_EQ(chunks.back(), "data: [DONE]\n\n");
  EXPECT_NE(chunks[chunks.size() - 2].find("failed mid-answer"), std::string::npos) << chunks[chunks.size() - 2];
  EXPECT_NE(chunks[chunks.size() - 2].find("\"error\""), std::string::npos);
}

TEST(Tunnel, HubCloseReachesTheAgentsHandlers) {
  std::atomic<int> started{0}, saw_gone{0};
  TunnelPair pair([&](const HttpRequest&, ResponseWriter& out) {
    out.begin_stream(200, "text/event-stream");
    ++started;
    // Writes until the tunnel is gone.
    for (int i = 0; i < 100000; ++i) {
      if (!out.write("data: more\n\n")) break;
      std::this_thread::sleep_for(1ms);
    }
    if (out.client_gone()) ++saw_gone;
  });
  std::vector<std::future<Status>> forwards;
  std::vector<FakeResponseWriter> outs(3);
  for (auto& out : outs) {
    forwards.push_back(
        std::async(std::launch::async, [&] { return pair.client->forward(make_request("GET", "/"), out); }));
  }
  ASSERT_TRUE(wait_until([&] { return started.load() == 3; }));
  auto agent_waited = std::async(std::launch::async, [&] { pair.server->wait(); });
  pair.client->close();
  for (auto& f : forwards) {
    ASSERT_EQ(f.wait_for(5s), std::future_status::ready);
    EXPECT_EQ(f.get().code(), StatusCode::Unavailable);
  }
  ASSERT_EQ(agent_waited.wait_for(5s), std::future_status::ready);
  EXPECT_TRUE(pair.server->closed());
  EXPECT_TRUE(wait_until([&] { return saw_gone.load() == 3; }));
}

TEST(Tunnel, PingMeasuresRoundTripAndDetectsASilentAgent) {
  TunnelOptions options;
  options.ping_interval = 50ms;
  options.ping_timeout = 3000ms;  // generous: a loaded CI machine must not time out a live peer
  {
    TunnelPair pair([](const HttpRequest&, ResponseWriter& out) { out.send(204, "", ""); }, options);
    ASSERT_TRUE(wait_until([&] { return pair.client->last_ping_rtt().has_value(); }));
    EXPECT_GE(pair.client->last_ping_rtt()->count(), 0);
    // Several intervals later the agent has not timed out the (pinging) hub.
    std::this_thread::sleep_for(4 * options.ping_interval);
    EXPECT_FALSE(pair.server->closed());
    EXPECT_FALSE(pair.client->closed());
  }
  options.ping_timeout = 300ms;
  {
    RawPeer peer;  // never reads, never answers
    auto client = TunnelClient::start(peer.take_tunnel_end(), options);
    ASSERT_TRUE(client.ok());
    std::atomic<bool> fired{false};
    (*client)->on_close([&] { fired = true; });
    ASSERT_TRUE(wait_until([&] { return (*client)->closed(); }));
    EXPECT_NE((*client)->close_reason().find("ping timeout"), std::string::npos) << (*client)->close_reason();
    EXPECT_TRUE(wait_until([&] { return fired.load(); }));
    EXPECT_FALSE((*client)->last_ping_rtt().has_value());
  }
  {
    // An agent whose hub goes silent after the handshake closes itself too.
    RawPeer peer;
    auto server = TunnelServer::start(
        peer.take_tunnel_end(), [](const HttpRequest&, ResponseWriter&) {}, options);
    ASSERT_TRUE(server.ok());
    peer.send_bytes(std::string("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n") + std::string("\0\0\0\4\0\0\0\0\0", 9));
    auto waited = std::async(std::launch::async, [&] { (*server)->wait(); });
    ASSERT_EQ(waited.wait_for(5s), std::future_status::ready);
    EXPECT_NE((*server)->close_reason().find("no frame from the hub"), std::string::npos) << (*server)->close_reason();
  }
}

TEST(Tunnel, GarbageClosesEitherSideCleanly) {
  TunnelOptions options;
  // The backstop for garbage nghttp2 would wait on: each side gives up on a silent peer quickly.
  options.ping_interval = 200ms;
  options.ping_timeout = 1000ms;
  std::mt19937 rng(42);
  auto garbage = [&](size_t size) {
    std::string s(size, '\0');
    for (char& c : s) c = static_cast<char>(rng());
    return s;
  };
  for (int round = 0; round < 6; ++round) {
    {
      RawPeer peer;
      auto server = TunnelServer::start(
          peer.take_tunnel_end(), [](const HttpRequest&, ResponseWriter&) {}, options);
      ASSERT_TRUE(server.ok());
      // Random bytes, or a valid preface followed by random frames.
      peer.send_bytes((round % 2 ? std::string("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n") : "") + garbage(4096));
      ASSERT_TRUE(wait_until([&] { return (*server)->closed(); })) << round;
    }
    {
      RawPeer peer;
      auto client = TunnelClient::start(peer.take_tunnel_end(), options);
      ASSERT_TRUE(client.ok());
      auto call = std::async(std::launch::async, [&] { return (*client)->call("GET", "/x", "", 5000ms); });
      peer.send_bytes(garbage(4096));
      ASSERT_TRUE(wait_until([&] { return (*client)->closed(); })) << round;
      ASSERT_EQ(call.wait_for(5s), std::future_status::ready);
      EXPECT_FALSE(call.get().ok());
    }
  }
  // Garbage already in the handshake leftovers.
  auto server = TunnelServer::start(
      RawPeer().take_tunnel_end(), [](const HttpRequest&, ResponseWriter&) {}, options, garbage(100));
  ASSERT_TRUE(server.ok());
  EXPECT_TRUE(wait_until([&] { return (*server)->closed(); }));
}

TEST(Tunnel, CallTimesOutAgainstAHandlerThatNeverAnswers) {
  std::atomic<bool> saw_gone{false};
  TunnelPair pair([&](const HttpRequest& request, ResponseWriter& out) {
    if (request.path == "/ok") {
      out.send(200, "application/json", "{\"ok\":true}", {{"x-reply", "1"}});
      return;
    }
    saw_gone = wait_until([&] { return out.client_gone(); }, 10000ms);
  });
  auto result = pair.client->call("POST", "/hang", "{}", 200ms);
  EXPECT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::Unavailable);
  EXPECT_TRUE(wait_until([&] { return saw_gone.load(); }));
  auto ok = pair.client->call("GET", "/ok", "", 5000ms, {{"X-Hub", "h"}});
  ASSERT_TRUE(ok.ok()) << ok.status().to_string();
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(ok->body, "{\"ok\":true}");
  EXPECT_EQ(header_value(ok->headers, "x-reply"), "1");
}

// A connected loopback TCP pair: {agent end, hub end}, or {-1, -1}.
std::pair<int, int> tcp_pair() {
  const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || ::listen(listener, 1) != 0 ||
      ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ::close(listener);
    return {-1, -1};
  }
  const int agent = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const bool connected = ::connect(agent, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  const int hub = connected ? ::accept(listener, nullptr, nullptr) : -1;
  ::close(listener);
  if (hub < 0) {
    ::close(agent);
    return {-1, -1};
  }
  return {agent, hub};
}

TEST(Tunnel, WorksOverLoopbackTcp) {
  const auto [agent_fd, hub_fd] = tcp_pair();
  ASSERT_GE(agent_fd, 0);
  auto server = TunnelServer::start(agent_fd, [](const HttpRequest& request, ResponseWriter& out) {
    out.begin_stream(200, "text/event-stream");
    for (int i = 0; i < 3; ++i) out.write("data: " + request.body + "\n\n");
    out.end_stream();
  });
  ASSERT_TRUE(server.ok());
  auto client = TunnelClient::start(hub_fd);
  ASSERT_TRUE(client.ok());
  FakeResponseWriter out;
  ASSERT_TRUE((*client)->forward(make_request("POST", "/v1/completions", "x"), out).ok());
  EXPECT_EQ(out.snapshot().body, "data: x\n\ndata: x\n\ndata: x\n\n");
  (*client)->close();
  auto waited = std::async(std::launch::async, [&] { (*server)->wait(); });
  EXPECT_EQ(waited.wait_for(5s), std::future_status::ready);
}

TEST(Tunnel, LimitsAndHandlerFailures) {
  TunnelOptions options;
  options.max_request_body = 1000;
  TunnelPair pair(
      [](const HttpRequest& request, ResponseWriter& out) {
        if (request.path == "/throw") throw std::runtime_error("boom");
        if (request.path == "/stream-throw") {
          out.begin_stream(200, "text/plain");
          out.write("partial");
          throw std::runtime_error("boom");
        }
        if (request.path == "/echo") out.send(200, "text/plain", request.body);
        if (request.path == "/empty") out.send(204, "", "");
        if (request.path == "/head") out.send(200, "text/plain", "twelve bytes", {{"x-h", "1"}});
        // Anything else: no response at all.
      },
      options);
  auto big = pair.client->call("POST", "/echo", std::string(1001, 'b'), 5000ms);
  ASSERT_TRUE(big.ok());
  EXPECT_EQ(big->status, 413);
  auto fits = pair.client->call("POST", "/echo", std::string(1000, 'b'), 5000ms);
  ASSERT_TRUE(fits.ok());
  EXPECT_EQ(fits->status, 200);
  EXPECT_EQ(fits->body.size(), 1000u);
  auto empty = pair.client->call("DELETE", "/empty", "", 5000ms);
  ASSERT_TRUE(empty.ok()) << empty.status().to_string();
  EXPECT_EQ(empty->status, 204);
  auto head = pair.client->call("HEAD", "/head", "", 5000ms);
  ASSERT_TRUE(head.ok()) << head.status().to_string();
  EXPECT_EQ(head->status, 200);
  EXPECT_EQ(head->body, "");
  EXPECT_EQ(header_value(head->headers, "content-length"), "12");
  auto silent = pair.client->call("GET", "/silent", "", 5000ms);
  ASSERT_TRUE(silent.ok());
  EXPECT_EQ(silent->status, 500);
  auto threw = pair.client->call("GET", "/throw", "", 5000ms);
  ASSERT_TRUE(threw.ok());
  EXPECT_EQ(threw->status, 500);
  FakeResponseWriter out;
  bool responded = false;
  // The reset may overtake the stream's HEADERS (then nothing was relayed): either way the hub
  // must see a failure, never a truncated response passed off as complete.
  const Status status = pair.client->forward(make_request("GET", "/stream-throw"), out, &responded);
  EXPECT_EQ(status.code(), StatusCode::Unavailable);
  EXPECT_NE(status.message().find("reset"), std::string::npos) << status.to_string();
  EXPECT_EQ(out.snapshot().ends, 0);
  EXPECT_EQ(responded, out.snapshot().begins == 1);
  EXPECT_FALSE(pair.client->closed());
}

}  // namespace
}  // namespace cellserve::fleet
