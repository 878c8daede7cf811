// Spooled request bodies (HttpServerOptions::spool_body) over real sockets on 127.0.0.1: the body
// lands intact in a file that is gone after the handler, limits and timeouts apply, failures
// leave no file behind, and requests not chosen for spooling are unchanged.
#include <sys/resource.h>
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "net/http_server.h"
#include "tests/net/raw_http_client.h"
#include "tests/net/temp_dir.h"

namespace cellserve::net {
namespace {

using namespace cellserve::net::rawhttp;
using cellserve::net::testing::read_file;
using cellserve::net::testing::TempDir;
using namespace std::chrono_literals;

std::string random_bytes(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::string out(n, '\0');
  for (char& c : out) c = static_cast<char>(rng());
  return out;
}

std::string chunked(const std::string& path, const std::string& body, size_t piece) {
  std::string out = "POST " + path + " HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (size_t at = 0; at < body.size(); at += piece) {
    const std::string part = body.substr(at, piece);
    char size[32];
    std::snprintf(size, sizeof(size), "%zx\r\n", part.size());
    out += size + part + "\r\n";
  }
  return out + "0\r\n\r\n";
}

// What the handler saw of the last request, for the test thread.
struct Seen {
  std::mutex mu;
  int calls = 0;
  std::string body_file;
  std::string file_contents;
  std::string memory_body;
  unsigned mode = 0;
};

// Spools POST /upload*; answers every request with "file|memory-body-size" and records it.
struct SpoolServer {
  explicit SpoolServer(HttpServerOptions options = {}) {
    options.spool_dir = dir.path();
    options.spool_body = [](const HttpRequest& head) { return head.path.rfind("/upload", 0) == 0; };
    server = start_server(
        [this](const HttpRequest& req, ResponseWriter& w) {
          {
            std::lock_guard lock(seen.mu);
            ++seen.calls;
            seen.body_file = req.body_file;
            seen.memory_body = req.body;
            seen.file_contents = req.body_file.empty() ? "" : read_file(req.body_file);
            struct stat st {};
            seen.mode = req.body_file.empty() || ::stat(req.body_file.c_str(), &st) != 0 ? 0 : st.st_mode & 0777;
          }
          if (req.path == "/upload/throw") throw std::runtime_error("handler failed");
          w.send(200, "text/plain", (req.body_file.empty() ? "memory|" : "file|") + std::to_string(req.body.size()));
        },
        options);
  }
  TempDir dir;
  Seen seen;
  std::unique_ptr<HttpServer> server;
};

TEST(SpooledBody, LargeBodyArrivesIntactInAFileGoneAfterTheHandler) {
  SpoolServer s;
  ASSERT_TRUE(s.server);
  const std::string body = random_bytes(20 << 20, 1);  // far over max_body_bytes (8 MiB)
  Client c(s.server->port());
  ASSERT_TRUE(c.send(post("/upload", body)));
  auto r = c.read_response();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "file|0");
  std::string body_file;
  {
    std::lock_guard lock(s.seen.mu);
    body_file = s.seen.body_file;
    EXPECT_EQ(s.seen.file_contents.size(), body.size());
    EXPECT_TRUE(s.seen.file_contents == body) << "the spooled bytes differ";
    EXPECT_EQ(s.seen.mode, 0600u);
  }
  EXPECT_EQ(body_file.rfind(s.dir.path() + "/", 0), 0u) << body_file;
  // The next request on the connection starts once the first has finished, file removal included.
  ASSERT_TRUE(c.send(get("/after")));
  r = c.read_response();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, "memory|0");
  struct stat st {};
  EXPECT_NE(::stat(body_file.c_str(), &st), 0) << body_file << " still exists";
  EXPECT_TRUE(s.dir.empty_soon());
}

TEST(SpooledBody, MemoryBodiesKeepTheirLimit) {
  SpoolServer s;
  ASSERT_TRUE(s.server);
  {
    Client c(s.server->port());
    const std::string body = random_bytes(8 << 20, 2);  // exactly max_body_bytes: fine
    ASSERT_TRUE(c.send(post("/memory", body)));
    auto r = c.read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "memory|" + std::to_string(body.size()));
    std::lock_guard lock(s.seen.mu);
    EXPECT_EQ(s.seen.body_file, "");
    EXPECT_TRUE(s.seen.memory_body == body);
  }
  for (const bool expect_continue : {false, true}) {
    // Refused on the declared length alone, before any body byte (and without 100 Continue).
    Client c(s.server->port());
    ASSERT_TRUE(c.send("POST /memory HTTP/1.1\r\nHost: t\r\nContent-Length: " + std::to_string((8 << 20) + 1) + "\r\n" +
                       (expect_continue ? "Expect: 100-continue\r\n" : "") + "\r\n"));
    auto r = c.read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 413);
    EXPECT_NE(r->body.find("8388608"), std::string::npos) << r->body;
  }
  const std::string chunked_body(64 << 10, 'x');
  HttpServerOptions small;
  small.max_body_bytes = 1024;
  SpoolServer t(small);
  ASSERT_TRUE(t.server);
  Client c(t.server->port());
  c.send(chunked("/memory", chunked_body, 4096));
  auto r = c.read_response();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 413);
  std::lock_guard lock(s.seen.mu);
  EXPECT_EQ(s.seen.calls, 1);
}

TEST(SpooledBody, ChunkedBodyIsSpooled) {
  SpoolServer s;
  ASSERT_TRUE(s.server);
  const std::string body = random_bytes((3 << 20) + 17, 3);
  Client c(s.server->port());
  ASSERT_TRUE(c.send(chunked("/upload", body, 100000)));
  auto r = c.read_response();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "file|0");
  std::lock_guard lock(s.seen.mu);
  EXPECT_TRUE(s.seen.file_contents == body) << "the spooled bytes differ";
}

TEST(SpooledBody, EmptyBodyGetsAnEmptyFile) {
  SpoolServer s;
  ASSERT_TRUE(s.server);
  Client c(s.server->port());
  ASSERT_TRUE(c.send(post("/upload", "")));
  auto r = c.read_response();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, "file|0");
  std::lock_guard lock(s.seen.mu);
  EXPECT_NE(s.seen.body_file, "");
  EXPECT_EQ(s.seen.file_contents, "");
}

TEST(SpooledBody, OverTheSpoolLimitIs413AndLeavesNoFile) {
  HttpServerOptions options;
  options.max_spooled_body_bytes = 1 << 20;
  SpoolServer s(options);
  ASSERT_TRUE(s.server);
  {
    Client c(s.server->port());
    ASSERT_TRUE(c.send(post("/upload", std::string(1 << 20, 'a'))));  // exactly the limit: fine
    auto r = c.read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
  }
  {
    // Declared: refused before a file is made.
    Client c(s.server->port());
    ASSERT_TRUE(c.send("POST /upload HTTP/1.1\r\nHost: t\r\nContent-Length: " + std::to_string((1 << 20) + 1) +
                       "\r\nExpect: 100-continue\r\n\r\n"));
    auto r = c.read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 413);
    EXPECT_NE(r->body.find("1048576"), std::string::npos) << r->body;
    EXPECT_TRUE(s.dir.empty_soon());
  }
  // Just over the limit, so that the client has sent it all within the server's lingering close
  // even on a loaded machine (a client still sending when the server closes gets a reset, and
  // may lose the 413 it was sent).
  constexpr size_t kOver = (1 << 20) + (64 << 10);
  for (const size_t piece : {size_t{4096}, kOver}) {
    // Chunked: counted as it arrives (small chunks), or refused on a chunk's size (one big chunk).
    Client c(s.server->port());
    c.send(chunked("/upload", std::string(kOver, 'b'), piece));  // the server may stop reading
    auto r = c.read_response();
    ASSERT_TRUE(r) << piece;
    EXPECT_EQ(r->status, 413);
    EXPECT_TRUE(s.dir.empty_soon()) << piece;
  }
  std::lock_guard lock(s.seen.mu);
  EXPECT_EQ(s.seen.calls, 1);
}

TEST(SpooledBody, StalledClientGets408AndLeavesNoFile) {
  HttpServerOptions options;
  options.spooled_read_timeout = 1s;  // read_timeout stays 30 s: the spooled limit applies
  SpoolServer s(options);
  ASSERT_TRUE(s.server);
  Client c(s.server->port());
  ASSERT_TRUE(c.send("POST /upload HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n\r\n" + std::string(5000, 'x')));
  auto r = c.read_response();  // the client gives up after 5 s
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 408);
  EXPECT_TRUE(s.dir.empty_soon());
  std::lock_guard lock(s.seen.mu);
  EXPECT_EQ(s.seen.calls, 0);
}

TEST(SpooledBody, SpooledReadTimeoutReplacesReadTimeout) {
  HttpServerOptions options;
  options.read_timeout = 1s;
  SpoolServer s(options);
  ASSERT_TRUE(s.server);
  Client c(s.server->port());
  // Slower than read_timeout in all, well within spooled_read_timeout.
  ASSERT_TRUE(c.send("POST /upload HTTP/1.1\r\nHost: t\r\nContent-Length: 6\r\n\r\nab"));
  std::this_thread::sleep_for(800ms);
  ASSERT_TRUE(c.send("cd"));
  std::this_thread::sleep_for(800ms);
  ASSERT_TRUE(c.send("ef"));
  auto r = c.read_response();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  std::lock_guard lock(s.seen.mu);
  EXPECT_EQ(s.seen.file_contents, "abcdef");
}

TEST(SpooledBody, ContinuesAfterExpect100) {
  SpoolServer s;
  ASSERT_TRUE(s.server);
  Client c(s.server->port());
  ASSERT_TRUE(c.send("POST /upload HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n"));
  auto interim = c.read_head();
  ASSERT_TRUE(interim);
  EXPECT_EQ(interim->status, 100);
  ASSERT_TRUE(c.send("hello"));
  auto r = c.read_response();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  std::lock_guard lock(s.seen.mu);
  EXPECT_EQ(s.seen.file_contents, "hello");
}

TEST(SpooledBody, FileIsRemovedWhenTheHandlerThrows) {
  SpoolServer s;
  ASSERT_TRUE(s.server);
  Client c(s.server->port());
  ASSERT_TRUE(c.send(post("/upload/throw", "payload")));
  auto r = c.read_response();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 500);
  {
    std::lock_guard lock(s.seen.mu);
    EXPECT_EQ(s.seen.file_contents, "payload");
  }
  ASSERT_TRUE(c.send(get("/after")));  // the first request is over once this one is answered
  ASSERT_TRUE(c.read_response());
  EXPECT_TRUE(s.dir.empty_soon());
}

TEST(SpooledBody, AFailedDiskWriteIs500AndLeavesNoFile) {
  // RLIMIT_FSIZE makes the spool file's writes fail (EFBIG) past 64 KiB, as a full disk would.
  struct FileSizeLimit {
    FileSizeLimit() {
      ::getrlimit(RLIMIT_FSIZE, &old);
      old_handler = std::signal(SIGXFSZ, SIG_IGN);
      rlimit small = old;
      small.rlim_cur = 64 << 10;
      ok = ::setrlimit(RLIMIT_FSIZE, &small) == 0;
    }
    ~FileSizeLimit() {
      ::setrlimit(RLIMIT_FSIZE, &old);
      std::signal(SIGXFSZ, old_handler);
    }
    rlimit old{};
    void (*old_handler)(int) = SIG_DFL;
    bool ok = false;
  };
  {
    FileSizeLimit limit;
    ASSERT_TRUE(limit.ok);
    SpoolServer s;
    ASSERT_TRUE(s.server);
    Client c(s.server->port());
    c.send(post("/upload", std::string(1 << 20, 'd')));  // the server may stop reading
    auto r = c.read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 500);
    EXPECT_NE(r->body.find("cannot store the request body"), std::string::npos) << r->body;
    EXPECT_TRUE(s.dir.empty_soon());
    std::lock_guard lock(s.seen.mu);
    EXPECT_EQ(s.seen.calls, 0);
  }
}

TEST(SpooledBody, PredicateSeesTheHeadAndMayThrow) {
  TempDir dir;
  std::mutex mu;
  HttpRequest head_seen;
  HttpServerOptions options;
  options.spool_dir = dir.path();
  options.spool_body = [&](const HttpRequest& head) {
    if (head.path == "/boom") throw std::runtime_error("predicate failed");
    std::lock_guard lock(mu);
    head_seen = head;
    return false;
  };
  auto server = start_server(echo_handler, options);
  ASSERT_TRUE(server);
  {
    Client c(server->port());
    ASSERT_TRUE(c.send(post("/v1/files?x=1", "body", "X-Test: yes\r\n")));
    auto r = c.read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->body, "POST /v1/files?x=1|yes|body");  // not spooled: in memory as ever
    std::lock_guard lock(mu);
    EXPECT_EQ(head_seen.method, "POST");
    EXPECT_EQ(head_seen.path, "/v1/files");
    EXPECT_EQ(head_seen.query, "x=1");
    EXPECT_EQ(head_seen.header("x-test"), "yes");
    EXPECT_EQ(head_seen.header("content-length"), "4");
    EXPECT_EQ(head_seen.body, "");
  }
  Client c(server->port());
  ASSERT_TRUE(c.send(post("/boom", "body")));
  auto r = c.read_response();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 500);
  EXPECT_TRUE(dir.empty_soon());
}

TEST(SpooledBody, RejectsAMissingSpoolDir) {
  HttpServerOptions options;
  options.port = 0;
  options.spool_dir = "/nonexistent/cellserve-spool";
  options.spool_body = [](const HttpRequest&) { return true; };
  auto server = HttpServer::start(options, echo_handler);
  ASSERT_FALSE(server.ok());
  EXPECT_EQ(server.status().code(), StatusCode::InvalidArgument);
  EXPECT_NE(server.status().message().find("spool_dir"), std::string::npos);
}

}  // namespace
}  // namespace cellserve::net
