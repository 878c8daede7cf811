// multipart/form-data (RFC 7578, framing per RFC 2046 5.1) read from a spooled request body
// (HttpRequest::body_file): text fields into memory, the one file part into a file, streaming, so
// an upload of hundreds of MiB never sits in memory. docs/http.md, "multipart/form-data".
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"

namespace cellserve::net {

// The body file is read in pieces of this size; a delimiter may straddle two of them.
inline constexpr size_t kMultipartReadBytes = 64 << 10;

struct MultipartLimits {
  size_t max_fields = 32;                  // text fields (the file part is not counted)
  size_t max_field_bytes = 64 << 10;       // one text field's value
  size_t max_part_header_bytes = 8 << 10;  // one part's header block, line breaks included
};

struct MultipartFile {
  std::string field;         // the part's name, e.g. "file"
  std::string filename;      // as sent (may be "" or contain '/' or '\': never use it as a path)
  std::string content_type;  // the part's Content-Type as sent, "" when absent
  uint64_t bytes = 0;        // the size of what was written to file_dest_path
};

struct MultipartForm {
  std::map<std::string, std::string> fields;  // name -> value (a name may appear once)
  std::optional<MultipartFile> file;          // the part with a filename, if any
};

// Parses the body in `body_path` per the boundary in `content_type` ("multipart/form-data; boundary=..."),
// streaming: the (single) part that has a filename is copied to `file_dest_path` (created 0600, at most
// `max_file_bytes`), every other part is a text field kept in memory within the limits. InvalidArgument
// naming the problem for: not multipart, a missing/too-long boundary, a part without a name, a second file
// part, a field over its limit, too many fields, truncated input (no closing delimiter), a file over
// max_file_bytes. On error no file is left at file_dest_path.
//
// Also InvalidArgument: a field name given twice, a Content-Disposition that is not form-data, a
// malformed part header or delimiter line. Internal: the body cannot be read, or the destination
// cannot be created (it must not exist: it is created with O_EXCL) or written. Line breaks must be
// CRLF. The preamble and the epilogue are ignored, as is everything after the closing delimiter.
// When no part has a filename, no file is created and `file` is nullopt.
Result<MultipartForm> read_multipart(const std::string& body_path, std::string_view content_type,
                                     const std::string& file_dest_path, uint64_t max_file_bytes,
                                     const MultipartLimits& limits = {});

}  // namespace cellserve::net
