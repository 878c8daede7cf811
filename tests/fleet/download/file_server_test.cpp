// make_file_handler over a real HttpServer, driven by libcurl: whole files, byte ranges, 416,
// If-Range, HEAD, streamed (large) bodies, and every way out of the root folder.
#include "fleet/download/file_server.h"

#include <curl/curl.h>
#include <unistd.h>

#include <cctype>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/fleet/download/test_support.h"

namespace cellserve::fleet {
namespace {

using testing::FileServerFixture;
using testing::test_bytes;
using testing::write_file;

struct Response {
  int status = 0;
  std::map<std::string, std::string> headers;  // names lower-cased, last value wins
  std::string body;
};

size_t on_body(char* data, size_t size, size_t n, void* user) {
  static_cast<Response*>(user)->body.append(data, size * n);
  return size * n;
}

size_t on_header(char* data, size_t size, size_t n, void* user) {
  const std::string line(data, size * n);
  const size_t colon = line.find(':');
  if (colon != std::string::npos) {
    std::string name = line.substr(0, colon);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::string value = line.substr(colon + 1);
    while (!value.empty() && std::isspace(static_cast<unsigned char>(value.front()))) value.erase(0, 1);
    while (!value.empty() && std::isspace(static_cast<unsigned char>(value.back()))) value.pop_back();
    static_cast<Response*>(user)->headers[name] = value;
  }
  return size * n;
}

// One request; the path is sent exactly as given (no "/../" squashing by curl).
Response fetch(const std::string& url, const std::string& method = "GET",
               const std::vector<std::string>& headers = {}) {
  Response r;
  CURL* c = curl_easy_init();
  curl_slist* list = nullptr;
  for (const std::string& h : headers) list = curl_slist_append(list, h.c_str());
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_PATH_AS_IS, 1L);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, 20L);
  if (method == "HEAD") {
    curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
  } else if (method != "GET") {
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method.c_str());
  }
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, list);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, &on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &r);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, &on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &r);
  if (curl_easy_perform(c) == CURLE_OK) {
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    r.status = static_cast<int>(status);
  }
  curl_slist_free_all(list);
  curl_easy_cleanup(c);
  return r;
}

class FileServerTest : public ::testing::Test {
 protected:
  void SetUp() override { write_file(server_.root() / "model.gguf", data_); }
  std::string url(const std::string& rel = "model.gguf") const { return server_.url("/files/" + rel); }
  Response range(const std::string& spec) { return fetch(url(), "GET", {"Range: " + spec}); }

  FileServerFixture server_;
  const std::string data_ = test_bytes(10000);
};

TEST_F(FileServerTest, WholeFile) {
  Response r = fetch(url());
  EXPECT_EQ(r.status, 200);
  EXPECT_TRUE(r.body == data_);
  EXPECT_EQ(r.headers["content-length"], "10000");
  EXPECT_EQ(r.headers["accept-ranges"], "bytes");
  EXPECT_EQ(r.headers["content-type"], "application/octet-stream");
  EXPECT_FALSE(r.headers["etag"].empty());
  EXPECT_EQ(r.headers["etag"], fetch(url()).headers["etag"]);  // stable
}

TEST_F(FileServerTest, Ranges) {
  Response r = range("bytes=100-199");
  EXPECT_EQ(r.status, 206);
  EXPECT_EQ(r.headers["content-range"], "bytes 100-199/10000");
  EXPECT_EQ(r.headers["content-length"], "100");
  EXPECT_TRUE(r.body == data_.substr(100, 100));

  r = range("bytes=9000-");
  EXPECT_EQ(r.status, 206);
  EXPECT_EQ(r.headers["content-range"], "bytes 9000-9999/10000");
  EXPECT_TRUE(r.body == data_.substr(9000));

  r = range("bytes=-10");  // suffix: the last 10 bytes
  EXPECT_EQ(r.status, 206);
  EXPECT_EQ(r.headers["content-range"], "bytes 9990-9999/10000");
  EXPECT_TRUE(r.body == data_.substr(9990));

  r = range("bytes=-20000");  // a suffix longer than the file: all of it
  EXPECT_EQ(r.status, 206);
  EXPECT_EQ(r.headers["content-range"], "bytes 0-9999/10000");
  EXPECT_TRUE(r.body == data_);

  r = range("bytes=9990-20000");  // the end is clamped
  EXPECT_EQ(r.status, 206);
  EXPECT_EQ(r.headers["content-range"], "bytes 9990-9999/10000");
  EXPECT_TRUE(r.body == data_.substr(9990));
}

TEST_F(FileServerTest, UnsatisfiableRangeIs416) {
  for (const std::string spec : {"bytes=10000-", "bytes=20000-20010", "bytes=-0"}) {
    Response r = range(spec);
    EXPECT_EQ(r.status, 416) << spec;
    EXPECT_EQ(r.headers["content-range"], "bytes */10000") << spec;
  }
}

TEST_F(FileServerTest, OtherRangesGetTheWholeFile) {
  for (const std::string spec : {"bytes=0-1,5-6", "bytes=5-2", "items=0-1", "bytes=x-", "bytes=-"}) {
    Response r = range(spec);
    EXPECT_EQ(r.status, 200) << spec;
    EXPECT_TRUE(r.body == data_) << spec;
  }
}

TEST_F(FileServerTest, IfRange) {
  const std::string etag = fetch(url()).headers["etag"];
  Response r = fetch(url(), "GET", {"Range: bytes=10-19", "If-Range: " + etag});
  EXPECT_EQ(r.status, 206);
  EXPECT_TRUE(r.body == data_.substr(10, 10));
  r = fetch(url(), "GET", {"Range: bytes=10-19", "If-Range: \"something-else\""});
  EXPECT_EQ(r.status, 200);
  EXPECT_TRUE(r.body == data_);
}

TEST_F(FileServerTest, Head) {
  Response r = fetch(url(), "HEAD");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.headers["content-length"], "10000");
  EXPECT_TRUE(r.body.empty());
  r = fetch(url(), "HEAD", {"Range: bytes=0-99"});
  EXPECT_EQ(r.status, 206);
  EXPECT_EQ(r.headers["content-length"], "100");
}

TEST_F(FileServerTest, EmptyFile) {
  write_file(server_.root() / "empty", "");
  Response r = fetch(url("empty"));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.headers["content-length"], "0");
  r = fetch(url("empty"), "GET", {"Range: bytes=0-"});
  EXPECT_EQ(r.status, 416);
  EXPECT_EQ(r.headers["content-range"], "bytes */0");
}

TEST_F(FileServerTest, SubfoldersAndEncodedNames) {
  write_file(server_.root() / "sub/dir/my model.gguf", "abc");
  Response r = fetch(url("sub/dir/my%20model.gguf"));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "abc");
}

TEST_F(FileServerTest, NothingOutsideTheRoot) {
  testing::TempDir outside;
  write_file(outside / "secret", "TOP-SECRET-CONTENT");
  ASSERT_EQ(::symlink((outside / "secret").c_str(), (server_.root() / "link_out").c_str()), 0);
  ASSERT_EQ(::symlink(outside.path().c_str(), (server_.root() / "dir_out").c_str()), 0);
  ASSERT_EQ(::symlink((server_.root() / "model.gguf").c_str(), (server_.root() / "link_in").c_str()), 0);
  write_file(server_.root() / "sub/x", "x");
  const std::string secret_rel = "../" + outside.path().substr(outside.path().rfind('/') + 1) + "/secret";
  for (const std::string& path : std::vector<std::string>{
           "/files/" + secret_rel, "/files/%2e%2e/" + secret_rel.substr(3), "/files/%2E%2E%2F" + secret_rel.substr(3),
           "/files/sub/../../" + secret_rel.substr(3), "/files/sub/%2e%2e/%2e%2e/" + secret_rel.substr(3),
           "/files/link_out", "/files/dir_out/secret", "/files/missing", "/files/sub", "/files/", "/files/sub/",
           "/files/model.gguf%00", "/files/model.gguf%zz", "/other/model.gguf", "/model.gguf",
           "/files" + outside.path()}) {
    Response r = fetch(server_.url(path));
    EXPECT_EQ(r.status, 404) << path;
    EXPECT_EQ(r.body.find("TOP-SECRET-CONTENT"), std::string::npos) << path;
  }
  EXPECT_EQ(fetch(url("link_in")).status, 200);  // a link that stays inside is fine
}

TEST_F(FileServerTest, OtherMethodsAre405) {
  for (const std::string method : {"POST", "PUT", "DELETE"}) {
    Response r = fetch(url(), method);
    EXPECT_EQ(r.status, 405) << method;
    EXPECT_EQ(r.headers["allow"], "GET, HEAD") << method;
  }
}

// Bodies above max_buffered_bytes are streamed in chunks (chunked encoding).
TEST(FileServerStreaming, LargeBodiesAreStreamed) {
  FileServerFixture server({.max_buffered_bytes = 1000, .chunk_bytes = 777});
  const std::string data = test_bytes(5000, 7);
  write_file(server.root() / "big", data);
  Response r = fetch(server.url("/files/big"));
  EXPECT_EQ(r.status, 200);
  EXPECT_TRUE(r.body == data);
  EXPECT_EQ(r.headers.count("content-length"), 0u);
  EXPECT_EQ(r.headers["transfer-encoding"], "chunked");
  r = fetch(server.url("/files/big"), "GET", {"Range: bytes=1234-"});
  EXPECT_EQ(r.status, 206);
  EXPECT_EQ(r.headers["content-range"], "bytes 1234-4999/5000");
  EXPECT_TRUE(r.body == data.substr(1234));
  r = fetch(server.url("/files/big"), "HEAD");
  EXPECT_EQ(r.status, 200);
  EXPECT_TRUE(r.body.empty());
  // Small ranges of a large file still go whole, with Content-Length.
  r = fetch(server.url("/files/big"), "GET", {"Range: bytes=0-99"});
  EXPECT_EQ(r.status, 206);
  EXPECT_EQ(r.headers["content-length"], "100");
  EXPECT_TRUE(r.body == data.substr(0, 100));
}

}  // namespace
}  // namespace cellserve::fleet
