// Shared by the download tests: a temporary folder, deterministic file contents, and an
// HttpServer on 127.0.0.1 that serves a folder through make_file_handler unless a test's fault
// hook answers the request first.
#pragma once

#include <stdlib.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "fleet/download/file_server.h"
#include "net/http_server.h"

namespace cellserve::fleet::testing {

// A fresh folder under $TMPDIR (or /tmp), removed with everything in it on destruction.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/cs_download_XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (::mkdtemp(buf.data()) != nullptr) path_ = buf.data();
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string operator/(const std::string& rel) const { return path_ + "/" + rel; }

 private:
  std::string path_;
};

// `size` deterministic pseudo-random bytes (xorshift), different per seed.
inline std::string test_bytes(size_t size, uint32_t seed = 1) {
  std::string out(size, '\0');
  uint32_t x = seed * 2654435761u + 1;
  for (char& c : out) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    c = static_cast<char>(x >> 24);
  }
  return out;
}

inline void write_file(const std::string& path, const std::string& data) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline bool exists(const std::string& path) {
  std::error_code ec;
  return std::filesystem::exists(path, ec);
}

// Serves root() at /files/ on an ephemeral port. A fault hook, called with the request and its
// 1-based number, may answer instead (return true) or let the file handler answer (false).
class FileServerFixture {
 public:
  using Fault = std::function<bool(const net::HttpRequest&, net::ResponseWriter&, int n)>;

  explicit FileServerFixture(FileHandlerOptions options = {}, std::string prefix = "/files/")
      : files_(make_file_handler(root_.path(), prefix, options)) {
    auto started =
        net::HttpServer::start({.host = "127.0.0.1", .port = 0},
                               [this](const net::HttpRequest& req, net::ResponseWriter& w) { handle(req, w); });
    EXPECT_TRUE(started.ok()) << started.status().to_string();
    if (started.ok()) server_ = std::move(started).value();
  }
  ~FileServerFixture() {
    if (server_) server_->stop();
  }

  const TempDir& root() const { return root_; }
  std::string url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(server_ ? server_->port() : 0) + path;
  }
  int port() const { return server_ ? server_->port() : 0; }
  int requests() const { return requests_.load(); }

  void set_fault(Fault fault) {
    std::lock_guard lock(mu_);
    fault_ = std::move(fault);
  }
  // The request headers seen so far, in order (names lower-case).
  std::vector<std::map<std::string, std::string>> seen_headers() const {
    std::lock_guard lock(mu_);
    return seen_;
  }
  const net::Handler& file_handler() const { return files_; }

 private:
  void handle(const net::HttpRequest& req, net::ResponseWriter& w) {
    const int n = ++requests_;
    Fault fault;
    {
      std::lock_guard lock(mu_);
      seen_.push_back(req.headers);
      fault = fault_;
    }
    if (fault && fault(req, w, n)) return;
    files_(req, w);
  }

  TempDir root_;
  net::Handler files_;
  std::unique_ptr<net::HttpServer> server_;
  std::atomic<int> requests_{0};
  mutable std::mutex mu_;
  Fault fault_;
  std::vector<std::map<std::string, std::string>> seen_;
};

}  // namespace cellserve::fleet::testing
