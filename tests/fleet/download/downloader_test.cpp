// download_file against a real HttpServer serving make_file_handler, with faults injected in
// front of it: dropped connections, ignored ranges, corrupt bytes, error statuses, redirects.
#include "fleet/download/downloader.h"

#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "fleet/crypto/sha256.h"
#include "fleet/download/partial_file.h"
#include "tests/fleet/download/test_support.h"

namespace cellserve::fleet {
namespace {

using namespace std::chrono_literals;
using testing::exists;
using testing::FileServerFixture;
using testing::read_file;
using testing::TempDir;
using testing::test_bytes;
using testing::write_file;

std::string sha256_of(const std::string& data) {
  Sha256 h;
  h.update(data);
  return h.hex_digest();
}

// Answers 200 with the first `n` bytes of `data`, then throws: the transport cuts the chunked
// body, as a dropped connection would.
void send_truncated(net::ResponseWriter& w, const std::string& data, size_t n) {
  w.begin_stream(200, "application/octet-stream");
  w.write(std::string_view(data).substr(0, n));
  throw std::runtime_error("injected connection drop");
}

class DownloaderTest : public ::testing::Test {
 protected:
  void SetUp() override { write_file(server_.root() / "model.gguf", data_); }

  DownloadRequest request(const std::string& rel = "model.gguf") const {
    DownloadRequest r;
    r.url = server_.url("/files/" + rel);
    r.dest_path = out_ / "models/model.gguf";
    r.sha256 = sha256_of(data_);
    r.first_backoff = 1ms;
    return r;
  }
  std::string dest() const { return out_ / "models/model.gguf"; }
  std::string partial() const { return dest() + ".partial"; }

  FileServerFixture server_;
  TempDir out_;
  const std::string data_ = test_bytes((1 << 20) + 123);
};

TEST_F(DownloaderTest, DownloadsAndVerifies) {
  uint64_t last_done = 0, last_total = 0;
  DownloadRequest r = request();
  r.progress = [&](uint64_t done, uint64_t total) {
    EXPECT_GE(done, last_done);
    last_done = done;
    last_total = total;
    return true;
  };
  const auto result = download_file(r);
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  EXPECT_EQ(result->path, dest());
  EXPECT_EQ(result->bytes, data_.size());
  EXPECT_EQ(result->sha256, sha256_of(data_));
  EXPECT_EQ(result->resumed_from, 0u);
  EXPECT_EQ(result->attempts, 1);
  EXPECT_TRUE(read_file(dest()) == data_);
  EXPECT_FALSE(exists(partial()));
  EXPECT_EQ(last_done, data_.size());
  EXPECT_EQ(last_total, data_.size());
}

TEST_F(DownloaderTest, UppercaseOrNoShaIsAccepted) {
  DownloadRequest r = request();
  for (char& c : r.sha256) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  ASSERT_TRUE(download_file(r).ok());
  r.sha256.clear();  // not verified: fetched again
  const auto result = download_file(r);
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  EXPECT_EQ(result->attempts, 1);
  EXPECT_EQ(result->sha256, sha256_of(data_));
}

TEST_F(DownloaderTest, ResumesAfterADroppedConnection) {
  server_.set_fault([&](const net::HttpRequest&, net::ResponseWriter& w, int n) {
    if (n != 1) return false;
    send_truncated(w, data_, 300000);
    return true;
  });
  const auto result = download_file(request());
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  EXPECT_EQ(result->attempts, 2);
  EXPECT_GT(result->resumed_from, 0u);
  EXPECT_LE(result->resumed_from, 300000u);
  EXPECT_TRUE(read_file(dest()) == data_);
  const auto seen = server_.seen_headers();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[1].at("range"), "bytes=" + std::to_string(result->resumed_from) + "-");
}

TEST_F(DownloaderTest, ResumesAnExistingPartial) {
  write_file(partial(), data_.substr(0, 5000));
  const auto result = download_file(request());
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  EXPECT_EQ(result->resumed_from, 5000u);
  EXPECT_EQ(result->attempts, 1);
  EXPECT_TRUE(read_file(dest()) == data_);
}

TEST_F(DownloaderTest, APartialOfTheFullSizeIsVerified) {
  write_file(partial(), data_);  // the server answers 416 "bytes */size"
  const auto result = download_file(request());
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  EXPECT_EQ(result->resumed_from, data_.size());
  EXPECT_TRUE(read_file(dest()) == data_);
  EXPECT_FALSE(exists(partial()));
}

TEST_F(DownloaderTest, APartialLongerThanTheFileStartsOver) {
  write_file(partial(), data_ + "extra bytes");
  const auto result = download_file(request());
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  EXPECT_EQ(result->attempts, 2);
  EXPECT_TRUE(read_file(dest()) == data_);
}

TEST_F(DownloaderTest, AServerIgnoringRangeStartsOver) {
  write_file(partial(), std::string(4000, 'x'));  // wrong bytes: must not survive
  server_.set_fault([&](const net::HttpRequest& req, net::ResponseWriter& w, int) {
    net::HttpRequest copy = req;
    copy.headers.erase("range");
    server_.file_handler()(copy, w);
    return true;
  });
  const auto result = download_file(request());
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  EXPECT_EQ(result->resumed_from, 0u);
  EXPECT_EQ(result->attempts, 1);
  EXPECT_TRUE(read_file(dest()) == data_);
}

TEST_F(DownloaderTest, ShaMismatchIsDataLossAndLeavesNothing) {
  DownloadRequest r = request();
  r.sha256 = sha256_of("something else");
  const auto result = download_file(r);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::DataLoss);
  EXPECT_EQ(result.status().message(),
            "sha256 mismatch: expected " + r.sha256 + "; the file fetched from " + r.url + " differs");
  // Never the digest of what came: a URL aimed at a private service would tell its content.
  EXPECT_EQ(result.status().message().find(sha256_of(data_)), std::string::npos);
  EXPECT_FALSE(exists(dest()));
  EXPECT_FALSE(exists(partial()));
}

TEST_F(DownloaderTest, CorruptBytesAreDataLoss) {
  server_.set_fault([&](const net::HttpRequest&, net::ResponseWriter& w, int) {
    std::string corrupt = data_;
    corrupt[12345] ^= 0x20;
    w.send(200, "application/octet-stream", corrupt);
    return true;
  });
  const auto result = download_file(request());
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::DataLoss);
  EXPECT_EQ(result.status().message().rfind("sha256 mismatch: expected " + sha256_of(data_), 0), 0u);
  EXPECT_FALSE(exists(dest()));
  EXPECT_FALSE(exists(partial()));
}

TEST_F(DownloaderTest, AVerifiedDestinationNeedsNoRequest) {
  write_file(dest(), data_);
  const auto result = download_file(request());
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  EXPECT_EQ(result->attempts, 0);
  EXPECT_EQ(result->bytes, data_.size());
  EXPECT_EQ(server_.requests(), 0);
}

TEST_F(DownloaderTest, AWrongDestinationIsReplaced) {
  write_file(dest(), "stale");
  const auto result = download_file(request());
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  EXPECT_EQ(result->attempts, 1);
  EXPECT_TRUE(read_file(dest()) == data_);
}

TEST_F(DownloaderTest, PermanentHttpErrors) {
  const auto error = [&](int status) {
    server_.set_fault([status](const net::HttpRequest&, net::ResponseWriter& w, int) {
      w.send(status, "text/plain", "nope");
      return true;
    });
    const int before = server_.requests();
    const auto result = download_file(request());
    EXPECT_EQ(server_.requests() - before, 1) << status;  // not retried
    EXPECT_FALSE(exists(partial())) << status;
    EXPECT_FALSE(exists(dest())) << status;
    return result.status();
  };
  EXPECT_EQ(error(404).code(), StatusCode::NotFound);
  EXPECT_EQ(error(410).code(), StatusCode::NotFound);
  const Status denied = error(403);
  EXPECT_EQ(denied.code(), StatusCode::PermissionDenied);
  EXPECT_NE(denied.message().find("HF_TOKEN"), std::string::npos) << denied.message();
  EXPECT_EQ(error(401).code(), StatusCode::PermissionDenied);
  EXPECT_EQ(error(400).code(), StatusCode::InvalidArgument);
}

TEST_F(DownloaderTest, TransientErrorsAreRetried) {
  server_.set_fault([](const net::HttpRequest&, net::ResponseWriter& w, int n) {
    if (n > 3) return false;
    w.send(n == 1 ? 503 : n == 2 ? 429 : 408, "text/plain", "busy");
    return true;
  });
  const auto result = download_file(request());
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  EXPECT_EQ(result->attempts, 4);
  EXPECT_TRUE(read_file(dest()) == data_);
}

TEST_F(DownloaderTest, GivesUpAfterMaxAttemptsAndKeepsThePartial) {
  server_.set_fault([&](const net::HttpRequest&, net::ResponseWriter& w, int n) {
    if (n == 1) send_truncated(w, data_, 1000);
    w.send(500, "text/plain", "broken");
    return true;
  });
  DownloadRequest r = request();
  r.max_attempts = 3;
  const auto result = download_file(r);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::Unavailable);
  EXPECT_NE(result.status().message().find("after 3 attempts"), std::string::npos) << result.status().message();
  EXPECT_NE(result.status().message().find("HTTP 500"), std::string::npos) << result.status().message();
  EXPECT_EQ(server_.requests(), 3);
  EXPECT_TRUE(exists(partial()));
  EXPECT_FALSE(exists(dest()));
}

TEST_F(DownloaderTest, CancelKeepsThePartialForALaterResume) {
  server_.set_fault([&](const net::HttpRequest&, net::ResponseWriter& w, int n) {
    if (n != 1) return false;
    // Half the file, then wait for the client to give up (at most 10 s).
    w.begin_stream(200, "application/octet-stream");
    w.write(std::string_view(data_).substr(0, 200000));
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (!w.client_gone() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(5ms);
    throw std::runtime_error("injected: client gone");
  });
  DownloadRequest r = request();
  r.progress = [](uint64_t done, uint64_t) { return done == 0; };
  const auto cancelled = download_file(r);
  ASSERT_FALSE(cancelled.ok());
  EXPECT_EQ(cancelled.status().code(), StatusCode::Unavailable);
  EXPECT_EQ(cancelled.status().message(), "cancelled");
  ASSERT_TRUE(exists(partial()));
  const uint64_t kept = read_file(partial()).size();
  EXPECT_GT(kept, 0u);
  EXPECT_FALSE(exists(dest()));

  const auto resumed = download_file(request());
  ASSERT_TRUE(resumed.ok()) << resumed.status().to_string();
  EXPECT_EQ(resumed->resumed_from, kept);
  EXPECT_TRUE(read_file(dest()) == data_);
}

TEST_F(DownloaderTest, BearerTokenIsSent) {
  DownloadRequest r = request();
  r.bearer_token = "hf_secret";
  ASSERT_TRUE(download_file(r).ok());
  ASSERT_EQ(server_.seen_headers().size(), 1u);
  EXPECT_EQ(server_.seen_headers()[0].at("authorization"), "Bearer hf_secret");
}

TEST_F(DownloaderTest, FollowsRedirectsWithoutForwardingTheTokenToAnotherHost) {
  const int port = server_.port();
  server_.set_fault([port](const net::HttpRequest& req, net::ResponseWriter& w, int) {
    if (req.path == "/same") {
      w.send(302, "text/plain", "", {{"Location", "/files/model.gguf"}});
      return true;
    }
    if (req.path == "/other") {  // "localhost" is another host name than 127.0.0.1
      w.send(302, "text/plain", "", {{"Location", "http://localhost:" + std::to_string(port) + "/files/model.gguf"}});
      return true;
    }
    return false;
  });
  DownloadRequest r = request();
  r.bearer_token = "hf_secret";
  r.url = server_.url("/same");
  auto result = download_file(r);
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  auto seen = server_.seen_headers();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[1].at("authorization"), "Bearer hf_secret");

  std::filesystem::remove(dest());
  r.url = server_.url("/other");
  result = download_file(r);
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  seen = server_.seen_headers();
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen[2].at("authorization"), "Bearer hf_secret");
  EXPECT_EQ(seen[3].count("authorization"), 0u);
  EXPECT_TRUE(read_file(dest()) == data_);
}

// The file endpoint streams large files without Content-Length; the size still reaches progress
// (from Content-Range) and truncation is still detected.
TEST(DownloaderStreamed, SizeIsKnownWithoutContentLength) {
  FileServerFixture server({.max_buffered_bytes = 4096, .chunk_bytes = 1000});
  TempDir out;
  const std::string data = test_bytes(50000, 3);
  write_file(server.root() / "m", data);
  DownloadRequest r;
  r.url = server.url("/files/m");
  r.dest_path = out / "m";
  r.first_backoff = 1ms;
  uint64_t last_total = 0;
  r.progress = [&](uint64_t, uint64_t total) {
    if (total > 0) last_total = total;
    return true;
  };
  const auto result = download_file(r);
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  EXPECT_EQ(last_total, data.size());
  EXPECT_TRUE(read_file(out / "m") == data);

  // A chunked 206 that ends cleanly but short is retried, not accepted.
  server.set_fault([&](const net::HttpRequest& req, net::ResponseWriter& w, int n) {
    if (n != 2) return false;
    EXPECT_EQ(req.header("range"), "bytes=0-");
    w.begin_stream(206, "application/octet-stream", {{"Content-Range", "bytes 0-49999/50000"}});
    w.write(std::string_view(data).substr(0, 7000));
    return true;  // the transport ends the chunked body cleanly
  });
  std::filesystem::remove(out / "m");
  const auto retried = download_file(r);
  ASSERT_TRUE(retried.ok()) << retried.status().to_string();
  EXPECT_EQ(retried->attempts, 2);
  EXPECT_EQ(retried->resumed_from, 7000u);
  EXPECT_TRUE(read_file(out / "m") == data);
}

TEST_F(DownloaderTest, NotEnoughFreeSpace) {
  DownloadRequest r = request();
  r.free_space_reserve = uint64_t{1} << 62;
  const auto result = download_file(r);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::ResourceExhausted);
  EXPECT_NE(result.status().message().find("free"), std::string::npos) << result.status().message();
  EXPECT_FALSE(exists(dest()));
}

TEST_F(DownloaderTest, EmptyFile) {
  write_file(server_.root() / "empty", "");
  DownloadRequest r = request("empty");
  r.sha256 = sha256_of("");
  const auto result = download_file(r);
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  EXPECT_EQ(result->bytes, 0u);
  EXPECT_TRUE(exists(dest()));
}

TEST_F(DownloaderTest, OneDownloadPerDestination) {
  std::filesystem::create_directories(std::filesystem::path(partial()).parent_path());
  auto busy = PartialFile::open(partial());  // as another download would hold it
  ASSERT_TRUE(busy.ok()) << busy.status().to_string();
  const auto result = download_file(request());
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::Unavailable);
  EXPECT_NE(result.status().message().find("being downloaded"), std::string::npos) << result.status().message();
  EXPECT_EQ(server_.requests(), 0);
}

TEST(Downloader, BadRequests) {
  TempDir out;
  DownloadRequest r;
  r.dest_path = out / "x";
  for (const std::string url : {"", "ftp://example.com/x", "file:///etc/passwd", "hf://o/r/f.gguf"}) {
    r.url = url;
    EXPECT_EQ(download_file(r).status().code(), StatusCode::InvalidArgument) << url;
  }
  r.url = "http://127.0.0.1:1/x";
  r.sha256 = "abc";
  EXPECT_EQ(download_file(r).status().code(), StatusCode::InvalidArgument);
  r.sha256.clear();
  r.dest_path.clear();
  EXPECT_EQ(download_file(r).status().code(), StatusCode::InvalidArgument);
}

TEST(Downloader, NobodyListening) {
  int port = 0;
  {
    FileServerFixture closed;
    port = closed.port();
  }
  TempDir out;
  DownloadRequest r;
  r.url = "http://127.0.0.1:" + std::to_string(port) + "/files/x";
  r.dest_path = out / "x";
  r.max_attempts = 2;
  r.first_backoff = 1ms;
  const auto result = download_file(r);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::Unavailable);
  EXPECT_FALSE(exists(out / "x.partial"));
}

// public_addresses_only: a loopback server is refused before a byte is sent, whether the URL
// names it, a name resolves to it or a redirect leads there; the trusted origin's own address and
// port are allowed, and nothing else on that host.
TEST_F(DownloaderTest, PublicOnlyRefusesALoopbackServer) {
  DownloadRequest r = request();
  r.public_addresses_only = true;
  for (const std::string& url :
       {server_.url("/files/model.gguf"), "http://localhost:" + std::to_string(server_.port()) + "/files/model.gguf"}) {
    r.url = url;
    const auto result = download_file(r);
    ASSERT_FALSE(result.ok()) << url;
    EXPECT_EQ(result.status().code(), StatusCode::PermissionDenied) << result.status().to_string();
    EXPECT_NE(result.status().message().find("a loopback address"), std::string::npos) << result.status().message();
    EXPECT_NE(result.status().message().find("--allow-private-downloads"), std::string::npos);
  }
  EXPECT_EQ(server_.requests(), 0);
  EXPECT_FALSE(exists(partial()));
}

TEST_F(DownloaderTest, PublicOnlyAllowsTheTrustedOriginAndNoRedirectAwayFromIt) {
  FileServerFixture internal;  // another loopback service: what a redirect must not reach
  write_file(internal.root() / "model.gguf", data_);
  server_.set_fault([&](const net::HttpRequest& req, net::ResponseWriter& w, int) {
    if (req.path != "/away") return false;
    w.send(302, "text/plain", "", {{"Location", internal.url("/files/model.gguf")}});
    return true;
  });
  DownloadRequest r = request();
  r.public_addresses_only = true;
  r.trusted_origin = "http://localhost:" + std::to_string(server_.port());  // resolved, then compared
  auto result = download_file(r);
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  EXPECT_TRUE(read_file(dest()) == data_);

  std::filesystem::remove(dest());
  r.url = server_.url("/away");
  result = download_file(r);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::PermissionDenied) << result.status().to_string();
  EXPECT_EQ(internal.requests(), 0);

  // The trusted origin is one address and port, not its host.
  r.trusted_origin = internal.url("");
  r.url = server_.url("/files/model.gguf");
  result = download_file(r);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::PermissionDenied) << result.status().to_string();
}

}  // namespace
}  // namespace cellserve::fleet
