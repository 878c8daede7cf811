#include "fleet/download/file_server.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string_view>

#include "base/parse_number.h"
#include "net/json_error.h"
#include "net/url_text.h"

namespace cellserve::fleet {
namespace {

constexpr std::string_view kOctetStream = "application/octet-stream";

using net::send_error;  // OpenAI-style error objects, as every other endpoint

// The file `rel` (decoded, relative) under `root`, resolved; nullopt when it escapes root.
std::optional<std::string> resolve_under(const std::string& root, const std::string& rel) {
  if (rel.empty() || rel.find('\0') != std::string::npos) return std::nullopt;
  size_t start = 0;
  for (;;) {  // no ".." segment, whatever realpath would make of it
    const size_t end = rel.find('/', start);
    const std::string_view seg = std::string_view(rel).substr(start, end == std::string::npos ? end : end - start);
    if (seg == "..") return std::nullopt;
    if (end == std::string::npos) break;
    start = end + 1;
  }
  char* root_real = ::realpath(root.c_str(), nullptr);
  if (root_real == nullptr) return std::nullopt;
  const std::string root_path = root_real;
  std::free(root_real);
  char* file_real = ::realpath((root_path + "/" + rel).c_str(), nullptr);
  if (file_real == nullptr) return std::nullopt;
  std::string file_path = file_real;
  std::free(file_real);
  const std::string prefix = root_path == "/" ? root_path : root_path + "/";
  if (!file_path.starts_with(prefix) || file_path.size() == prefix.size()) return std::nullopt;
  return file_path;
}

struct ByteRange {
  uint64_t first = 0, last = 0;  // inclusive
};

enum class RangeKind { None, Satisfiable, Unsatisfiable };

// Parses a Range header against a file of `size` bytes (RFC 9110 14.1.2). Anything but one
// well-formed bytes range is None: the whole file is sent.
RangeKind parse_range(std::string_view header, uint64_t size, ByteRange* out) {
  constexpr std::string_view kBytes = "bytes=";
  if (!header.starts_with(kBytes)) return RangeKind::None;
  std::string_view spec = header.substr(kBytes.size());
  while (!spec.empty() && spec.front() == ' ') spec.remove_prefix(1);
  while (!spec.empty() && spec.back() == ' ') spec.remove_suffix(1);
  if (spec.find(',') != std::string_view::npos) return RangeKind::None;
  const size_t dash = spec.find('-');
  if (dash == std::string_view::npos) return RangeKind::None;
  const std::string_view a = spec.substr(0, dash), b = spec.substr(dash + 1);
  if (a.empty()) {  // "-n": the last n bytes
    const auto n = parse_u64(b);
    if (!n) return RangeKind::None;
    if (*n == 0 || size == 0) return RangeKind::Unsatisfiable;
    out->first = *n >= size ? 0 : size - *n;
    out->last = size - 1;
    return RangeKind::Satisfiable;
  }
  const auto first = parse_u64(a);
  if (!first) return RangeKind::None;
  std::optional<uint64_t> last;
  if (!b.empty()) {
    last = parse_u64(b);
    if (!last || *last < *first) return RangeKind::None;
  }
  if (*first >= size) return RangeKind::Unsatisfiable;
  out->first = *first;
  out->last = last ? std::min(*last, size - 1) : size - 1;
  return RangeKind::Satisfiable;
}

std::string hex(uint64_t v) {
  char buf[17];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v, 16);
  return std::string(buf, end);
}

// Reads [offset, offset + size) of `fd` into `out`. False on an I/O error or a short file.
bool read_at(int fd, uint64_t offset, size_t size, std::string* out) {
  out->resize(size);
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::pread(fd, out->data() + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

class FileHandler {
 public:
  FileHandler(std::string root, std::string prefix, FileHandlerOptions options)
      : root_(std::move(root)), prefix_(std::move(prefix)), options_(options) {
    if (options_.chunk_bytes == 0) options_.chunk_bytes = size_t{1} << 20;
  }

  void operator()(const net::HttpRequest& req, net::ResponseWriter& w) const {
    if (req.method != "GET" && req.method != "HEAD") {
      send_error(w, 405, "method " + req.method + " not allowed", {{"Allow", "GET, HEAD"}});
      return;
    }
    const auto not_found = [&] { send_error(w, 404, "no such file: " + req.path); };
    if (!req.path.starts_with(prefix_)) return not_found();
    const auto rel = net::percent_decode(std::string_view(req.path).substr(prefix_.size()));
    if (!rel) return not_found();
    const auto path = resolve_under(root_, *rel);
    if (!path) return not_found();
    const int fd = ::open(path->c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) return not_found();
    struct FdCloser {
      int fd;
      ~FdCloser() { ::close(fd); }
    } closer{fd};
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return not_found();
    serve_file(req, w, fd, st);
  }

 private:
  void serve_file(const net::HttpRequest& req, net::ResponseWriter& w, int fd, const struct stat& st) const {
    const auto size = static_cast<uint64_t>(st.st_size);
    const uint64_t mtime_ns = static_cast<uint64_t>(st.st_mtim.tv_sec) * 1000000000ULL + st.st_mtim.tv_nsec;
    const std::string etag = "\"" + hex(size) + "-" + hex(mtime_ns) + "\"";
    net::HeaderList headers{{"Accept-Ranges", "bytes"}, {"ETag", etag}};

    ByteRange range{0, size == 0 ? 0 : size - 1};
    int status = 200;
    const std::string if_range = req.header("if-range");
    const std::string range_header = req.header("range");
    if (!range_header.empty() && (if_range.empty() || if_range == etag)) {
      switch (parse_range(range_header, size, &range)) {
        case RangeKind::Unsatisfiable:
          headers.emplace_back("Content-Range", "bytes */" + std::to_string(size));
          send_error(w, 416, "range not satisfiable: " + range_header, headers);
          return;
        case RangeKind::Satisfiable:
          status = 206;
          headers.emplace_back("Content-Range", "bytes " + std::to_string(range.first) + "-" +
                                                    std::to_string(range.last) + "/" + std::to_string(size));
          break;
        case RangeKind::None:
          range = {0, size == 0 ? 0 : size - 1};
          break;
      }
    }
    const uint64_t length = size == 0 ? 0 : range.last - range.first + 1;
    if (length <= options_.max_buffered_bytes) {
      std::string body;
      if (req.method == "HEAD") {
        // The transport writes only the headers for HEAD, and takes Content-Length from the
        // body's size: a body of the right size, never read from the file.
        body.assign(static_cast<size_t>(length), '\0');
      } else if (!read_at(fd, range.first, static_cast<size_t>(length), &body)) {
        send_error(w, 500, "cannot read " + std::string(req.path));
        return;
      }
      w.send(status, kOctetStream, std::move(body), headers);
      return;
    }
    if (!w.begin_stream(status, kOctetStream, headers) || req.method == "HEAD") return;
    std::string chunk;
    for (uint64_t pos = range.first; pos <= range.last;) {
      const auto n = static_cast<size_t>(std::min<uint64_t>(options_.chunk_bytes, range.last - pos + 1));
      // A clean end of a chunked body would look complete: throw so the transport cuts it.
      if (!read_at(fd, pos, n, &chunk)) throw std::runtime_error("file read failed mid-response");
      if (!w.write(chunk)) return;  // the client is gone
      pos += n;
    }
  }

  std::string root_;
  std::string prefix_;
  FileHandlerOptions options_;
};

}  // namespace

net::Handler make_file_handler(std::string root_dir, std::string url_prefix, FileHandlerOptions options) {
  return FileHandler(std::move(root_dir), std::move(url_prefix), options);
}

}  // namespace cellserve::fleet
