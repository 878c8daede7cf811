// libFuzzer target: a hostile upload's multipart/form-data body (net/multipart.h), as the hub's
// POST /d/<deployment>/v1/files reads it from the spooled file. The input's first line is the
// Content-Type header value (so boundaries of every shape are tried); the rest is the body.
// Every input must end in a form or an error, with no file left behind on error.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "net/multipart.h"

namespace {

std::string temp_path(const char* what) {
  static const std::string dir = [] {
    const char* t = std::getenv("TMPDIR");
    return std::string(t != nullptr && *t != '\0' ? t : "/tmp");
  }();
  return dir + "/cs-multipart-fuzz-" + std::to_string(::getpid()) + "-" + what;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t nl = input.find('\n');
  const std::string_view content_type = nl == std::string_view::npos ? input : input.substr(0, nl);
  const std::string_view body = nl == std::string_view::npos ? std::string_view() : input.substr(nl + 1);
  const std::string body_path = temp_path("body");
  const std::string dest = temp_path("file");
  std::FILE* f = std::fopen(body_path.c_str(), "wb");
  if (f == nullptr) return 0;
  std::fwrite(body.data(), 1, body.size(), f);
  std::fclose(f);
  ::unlink(dest.c_str());
  auto form = cellserve::net::read_multipart(body_path, content_type, dest, 1 << 16);
  if (!form.ok() && ::access(dest.c_str(), F_OK) == 0) std::abort();  // an error must leave no file
  ::unlink(dest.c_str());
  ::unlink(body_path.c_str());
  return 0;
}
