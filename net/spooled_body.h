// Request bodies written to a file as they arrive instead of to memory (HttpServerOptions::
// spool_body), for uploads far larger than max_body_bytes. Internal to net/: the temporary file
// and the Beast Body type whose reader fills it. docs/http.md, "Spooled request bodies".
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include <boost/asio/buffer.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/optional.hpp>

#include "base/status.h"

namespace cellserve::net {

// A temporary file, created with mkstemp (mode 0600), that is closed and removed when this
// object goes, whatever became of the request. Not copyable.
class SpoolFile {
 public:
  // Creates "<dir>/cellserve-body-XXXXXX"; dir "" is the system temp dir ($TMPDIR, else /tmp).
  // Internal when the file cannot be created.
  static Result<std::unique_ptr<SpoolFile>> create(const std::string& dir);

  // Removes the file, unless the path no longer names it (a handler renamed it away to keep it).
  ~SpoolFile();
  SpoolFile(const SpoolFile&) = delete;
  SpoolFile& operator=(const SpoolFile&) = delete;

  int fd() const { return fd_; }
  const std::string& path() const { return path_; }

 private:
  SpoolFile(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}

  int fd_;
  std::string path_;
};

// A Beast Body for request parsers: the reader appends the payload to `fd` and refuses more than
// `limit` bytes (http::error::body_limit), whatever the framing. A failed write is recorded in
// write_errno, so the caller can tell the disk's failure (ours: 500) from the peer's.
struct SpoolBody {
  struct value_type {
    int fd = -1;          // not owned; set before the body is read
    uint64_t limit = 0;   // the most payload bytes accepted
    uint64_t bytes = 0;   // written so far
    int write_errno = 0;  // errno of a failed write, 0 when none
  };

  class reader {
   public:
    template <bool isRequest, class Fields>
    reader(boost::beast::http::header<isRequest, Fields>&, value_type& body) : body_(body) {}

    void init(const boost::optional<std::uint64_t>& content_length, boost::beast::error_code& ec) {
      ec = {};
      if (content_length && *content_length > body_.limit) ec = boost::beast::http::error::body_limit;
    }

    template <class ConstBufferSequence>
    std::size_t put(const ConstBufferSequence& buffers, boost::beast::error_code& ec) {
      ec = {};
      size_t taken = 0;
      for (auto it = boost::asio::buffer_sequence_begin(buffers); it != boost::asio::buffer_sequence_end(buffers);
           ++it) {
        const boost::asio::const_buffer b = *it;
        if (!append(static_cast<const char*>(b.data()), b.size(), ec)) return taken;
        taken += b.size();
      }
      return taken;
    }

    void finish(boost::beast::error_code& ec) { ec = {}; }

   private:
    // Writes all of [data, data + size) or sets `ec` and returns false.
    bool append(const char* data, size_t size, boost::beast::error_code& ec);

    value_type& body_;
  };
};

}  // namespace cellserve::net
