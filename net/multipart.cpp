#include "net/multipart.h"

#include <fcntl.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <optional>
#include <string>
#include <system_error>
#include <utility>

#include "net/header_params.h"

namespace cellserve::net {
namespace {

constexpr size_t kMaxBoundary = 70;  // RFC 2046 5.1.1
constexpr size_t kMaxQuoted = 64;    // how much of a client's name an error message repeats

Status bad(const std::string& message) { return Status::invalid_argument("multipart: " + message); }

Status truncated() { return bad("the body ends before the closing delimiter (truncated upload?)"); }

Status io_error(const std::string& what, const std::string& path, int err) {
  return Status::internal("multipart: cannot " + what + " " + path + ": " + std::system_category().message(err));
}

// `s` in quotes for an error message, cut short when long.
std::string quote_name(std::string_view s) {
  if (s.size() > kMaxQuoted) return "\"" + std::string(s.substr(0, kMaxQuoted)) + "...\"";
  return "\"" + std::string(s) + "\"";
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  }
  return true;
}

// The boundary parameter of a multipart/form-data Content-Type.
Result<std::string> boundary_of(std::string_view content_type) {
  Result<HeaderValue> parsed = parse_header_value(content_type);
  if (!parsed.ok()) return bad("Content-Type: " + parsed.status().message());
  if (parsed->value != "multipart/form-data") return bad("the Content-Type is not multipart/form-data");
  std::optional<std::string> boundary = parsed->param("boundary");
  if (!boundary || boundary->empty()) return bad("the Content-Type has no boundary");
  if (boundary->size() > kMaxBoundary) return bad("the boundary is longer than 70 characters");
  // RFC 2046 allows fewer characters; any printable ASCII is matched just as safely.
  for (const char c : *boundary) {
    if (c < 0x20 || c > 0x7e) return bad("the boundary holds a character that is not printable ASCII");
  }
  if (boundary->back() == ' ') return bad("the boundary ends with a space");
  return *boundary;
}

// The body file, read in kMultipartReadBytes pieces, and the bytes of it not yet consumed.
class BodyReader {
 public:
  // `prefix`: bytes taken to precede the file's own.
  BodyReader(int fd, const std::string& path, std::string prefix) : fd_(fd), path_(path), buf_(std::move(prefix)) {}

  std::string_view available() const { return std::string_view(buf_).substr(pos_); }
  void consume(size_t n) { pos_ += n; }

  // Appends the next piece of the file; false at its end.
  Result<bool> read_more() {
    if (eof_) return false;
    buf_.erase(0, pos_);
    pos_ = 0;
    const size_t old = buf_.size();
    buf_.resize(old + kMultipartReadBytes);
    for (;;) {
      const ssize_t n = ::read(fd_, buf_.data() + old, kMultipartReadBytes);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        const int err = errno;
        buf_.resize(old);
        return io_error("read", path_, err);
      }
      buf_.resize(old + static_cast<size_t>(n));
      eof_ = n == 0;
      return n > 0;
    }
  }

  // Reads until at least `n` bytes are available; false when the file ends first.
  Result<bool> fill(size_t n) {
    while (available().size() < n) {
      CS_ASSIGN_OR_RETURN(const bool more, read_more());
      if (!more) return false;
    }
    return true;
  }

  // Hands the bytes before the next `delimiter` to `sink` (a Status(std::string_view)), in
  // pieces, and consumes them and the delimiter. False when the file ends before a delimiter.
  template <class Sink>
  Result<bool> copy_until(std::string_view delimiter, Sink&& sink) {
    for (;;) {
      const std::string_view view = available();
      const size_t at = view.find(delimiter);
      if (at != std::string_view::npos) {
        CS_RETURN_IF_ERROR(sink(view.substr(0, at)));
        consume(at + delimiter.size());
        return true;
      }
      // The last delimiter.size() - 1 bytes may be the start of a delimiter that the next piece
      // completes: they stay.
      if (view.size() >= delimiter.size()) {
        const size_t safe = view.size() - (delimiter.size() - 1);
        CS_RETURN_IF_ERROR(sink(view.substr(0, safe)));
        consume(safe);
      }
      CS_ASSIGN_OR_RETURN(const bool more, read_more());
      if (!more) return false;
    }
  }

 private:
  const int fd_;
  const std::string& path_;
  std::string buf_;
  size_t pos_ = 0;
  bool eof_ = false;
};

// After a delimiter: "--" closes the body (true); otherwise optional whitespace (transport
// padding) and CRLF begin a part (false).
Result<bool> after_delimiter(BodyReader& in, size_t max_padding) {
  CS_ASSIGN_OR_RETURN(const bool have, in.fill(2));
  if (!have) return truncated();
  if (in.available().substr(0, 2) == "--") {
    in.consume(2);
    return true;
  }
  for (size_t padding = 0;; ++padding) {
    CS_ASSIGN_OR_RETURN(const bool more, in.fill(2));
    if (!more) return truncated();
    const std::string_view v = in.available();
    if (v.substr(0, 2) == "\r\n") {
      in.consume(2);
      return false;
    }
    if ((v[0] != ' ' && v[0] != '\t') || padding == max_padding) {
      return bad("malformed delimiter line: the boundary is followed by other text");
    }
    in.consume(1);
  }
}

struct PartHead {
  std::string name;
  std::optional<std::string> filename;  // set for a file part
  std::string content_type;             // "" when absent
};

// Applies one header line of a part to `head`.
Status parse_part_header(std::string_view line, bool& seen_disposition, PartHead& head) {
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos || colon == 0) return bad("malformed part header (no \"name: value\")");
  const std::string_view name = line.substr(0, colon);
  std::string_view value = line.substr(colon + 1);
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
  for (const char c : line) {
    if (c == '\0' || c == '\r' || c == '\n') return bad("malformed part header (a control character)");
  }
  if (iequals(name, "content-disposition")) {
    if (seen_disposition) return bad("a part has two Content-Disposition headers");
    seen_disposition = true;
    Result<HeaderValue> parsed = parse_header_value(value);
    if (!parsed.ok()) return bad("Content-Disposition: " + parsed.status().message());
    if (parsed->value != "form-data") return bad("a part's Content-Disposition is not form-data");
    head.name = parsed->param("name").value_or("");
    head.filename = parsed->param("filename");
  } else if (iequals(name, "content-type")) {
    head.content_type = std::string(value);
  }
  return {};
}

// Reads a part's header block (lines up to an empty one), at most `limit` bytes.
Result<PartHead> read_part_head(BodyReader& in, size_t limit) {
  PartHead head;
  bool seen_disposition = false;
  size_t used = 0;
  for (;;) {
    const std::string_view view = in.available();
    const size_t eol = view.find("\r\n");
    if (eol == std::string_view::npos) {
      if (used + view.size() > limit) return bad("a part's header exceeds " + std::to_string(limit) + " bytes");
      CS_ASSIGN_OR_RETURN(const bool more, in.read_more());
      if (!more) return truncated();
      continue;
    }
    used += eol + 2;
    if (used > limit) return bad("a part's header exceeds " + std::to_string(limit) + " bytes");
    const std::string_view line = view.substr(0, eol);
    if (line.empty()) {
      in.consume(2);
      break;
    }
    CS_RETURN_IF_ERROR(parse_part_header(line, seen_disposition, head));
    in.consume(eol + 2);
  }
  if (head.name.empty()) return bad("a part has no name (Content-Disposition: form-data; name=\"...\")");
  return head;
}

// The file part's destination: created on first use (O_EXCL, 0600), removed unless kept.
class DestFile {
 public:
  explicit DestFile(const std::string& path) : path_(path) {}
  ~DestFile() {
    if (fd_ >= 0) ::close(fd_);
    if (created_ && !kept_) ::unlink(path_.c_str());
  }
  DestFile(const DestFile&) = delete;
  DestFile& operator=(const DestFile&) = delete;

  Status create() {
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd_ < 0) return io_error("create", path_, errno);
    created_ = true;
    return {};
  }

  Status write(std::string_view data) {
    while (!data.empty()) {
      const ssize_t n = ::write(fd_, data.data(), data.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return io_error("write", path_, n < 0 ? errno : EIO);
      data.remove_prefix(static_cast<size_t>(n));
    }
    return {};
  }

  // Closes the file (reporting a late write error) and keeps it.
  Status keep() {
    if (fd_ >= 0) {
      const int fd = fd_;
      fd_ = -1;
      if (::close(fd) != 0) return io_error("write", path_, errno);
    }
    kept_ = true;
    return {};
  }

 private:
  const std::string& path_;
  int fd_ = -1;
  bool created_ = false;
  bool kept_ = false;
};

// Closes a descriptor when it goes.
struct FdCloser {
  int fd;
  ~FdCloser() { ::close(fd); }
};

}  // namespace

Result<MultipartForm> read_multipart(const std::string& body_path, std::string_view content_type,
                                     const std::string& file_dest_path, uint64_t max_file_bytes,
                                     const MultipartLimits& limits) {
  CS_ASSIGN_OR_RETURN(const std::string boundary, boundary_of(content_type));
  const int fd = ::open(body_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return io_error("open", body_path, errno);
  FdCloser closer{fd};
  DestFile dest(file_dest_path);

  // Every delimiter is CRLF "--" boundary. The first may open the body itself, so the body is
  // read as if a CRLF preceded it.
  const std::string delimiter = "\r\n--" + boundary;
  BodyReader in(fd, body_path, "\r\n");
  const auto discard = [](std::string_view) { return Status(); };
  CS_ASSIGN_OR_RETURN(const bool found, in.copy_until(delimiter, discard));  // the preamble
  if (!found) return bad("the body has no delimiter line (--" + boundary + ")");

  MultipartForm form;
  for (;;) {
    CS_ASSIGN_OR_RETURN(const bool closed, after_delimiter(in, limits.max_part_header_bytes));
    if (closed) break;
    CS_ASSIGN_OR_RETURN(PartHead head, read_part_head(in, limits.max_part_header_bytes));
    bool complete = false;
    if (head.filename) {
      if (form.file) return bad("a second file part (" + quote_name(head.name) + "); one file per upload");
      CS_RETURN_IF_ERROR(dest.create());
      MultipartFile file{head.name, *head.filename, head.content_type, 0};
      const auto to_file = [&](std::string_view piece) -> Status {
        if (piece.size() > max_file_bytes - file.bytes) {
          return bad("the file exceeds " + std::to_string(max_file_bytes) + " bytes");
        }
        file.bytes += piece.size();
        return dest.write(piece);
      };
      CS_ASSIGN_OR_RETURN(complete, in.copy_until(delimiter, to_file));
      form.file = std::move(file);
    } else {
      if (form.fields.count(head.name)) return bad("field " + quote_name(head.name) + " is given twice");
      if (form.fields.size() >= limits.max_fields) {
        return bad("more than " + std::to_string(limits.max_fields) + " fields");
      }
      std::string value;
      const auto to_value = [&](std::string_view piece) -> Status {
        if (piece.size() > limits.max_field_bytes - value.size()) {
          return bad("field " + quote_name(head.name) + " exceeds " + std::to_string(limits.max_field_bytes) +
                     " bytes");
        }
        value.append(piece);
        return {};
      };
      CS_ASSIGN_OR_RETURN(complete, in.copy_until(delimiter, to_value));
      form.fields.emplace(std::move(head.name), std::move(value));
    }
    if (!complete) return truncated();
  }
  CS_RETURN_IF_ERROR(dest.keep());
  return form;
}

}  // namespace cellserve::net
