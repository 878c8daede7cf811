// The hub's own file endpoint: serves the regular files under a folder over HTTP with byte
// ranges, so agents download (and resume) models from the hub. The hub mounts it at /files/.
#pragma once

#include <cstddef>
#include <string>

#include "net/http_types.h"

namespace cellserve::fleet {

struct FileHandlerOptions {
  // Bodies up to this size are read whole and sent with Content-Length; larger ones are streamed
  // in chunk_bytes pieces with chunked encoding (no Content-Length: ResponseWriter::begin_stream
  // cannot carry one, see docs/pull.md), so memory stays bounded.
  size_t max_buffered_bytes = size_t{64} << 20;
  size_t chunk_bytes = size_t{1} << 20;
};

// Returns a handler serving root_dir/<rel> at url_prefix + <rel> (url_prefix e.g. "/files/",
// <rel> percent-decoded):
//   GET, HEAD     200 with Accept-Ranges: bytes, ETag "<size>-<mtime>" (hex), Content-Length for
//                 buffered bodies; a single "Range: bytes=a-b", "a-" or "-n" gives 206 with
//                 Content-Range (unless If-Range names another ETag); an unsatisfiable one 416
//                 with "Content-Range: bytes */size"; several ranges or a malformed Range: 200.
//   404           paths outside url_prefix, missing files, folders, and any path that escapes
//                 root_dir (".." segments, encoded or not, and symlinks resolving outside it).
//   405           other methods (Allow: GET, HEAD).
// root_dir is resolved (realpath) per request; files are opened per request, so they may be
// replaced while the server runs. The handler is thread-safe and never throws, except to cut
// a streamed body short when the file cannot be read mid-way (the transport then drops the
// connection, so the client sees a truncated body instead of a clean end).
net::Handler make_file_handler(std::string root_dir, std::string url_prefix, FileHandlerOptions options = {});

}  // namespace cellserve::fleet
