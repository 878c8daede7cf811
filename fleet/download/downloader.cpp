#include "fleet/download/downloader.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "base/parse_number.h"
#include "fleet/crypto/sha256.h"
#include "fleet/download/address_policy.h"
#include "fleet/download/partial_file.h"
#include "fleet/tls/name_resolution.h"

namespace cellserve::fleet {
namespace {

using Clock = std::chrono::steady_clock;

std::string mib(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return buf;
}

// curl_global_init is not thread-safe: run it once, before any easy handle.
void init_curl_once() {
  static const CURLcode rc = curl_global_init(CURL_GLOBAL_DEFAULT);
  (void)rc;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// The headers of the response being received (reset at each status line: redirects, 1xx).
struct ResponseHeaders {
  std::optional<uint64_t> content_length;
  std::optional<uint64_t> range_start;  // Content-Range: bytes a-b/total
  std::optional<uint64_t> range_total;  // total, also from "bytes */total"
  std::string etag;

  void parse_line(std::string_view line) {
    if (line.starts_with("HTTP/")) {
      *this = {};
      return;
    }
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) return;
    std::string name(trim(line.substr(0, colon)));
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const std::string_view value = trim(line.substr(colon + 1));
    if (name == "content-length") {
      content_length = parse_u64(value);
    } else if (name == "etag") {
      etag = std::string(value);
    } else if (name == "content-range" && value.starts_with("bytes ")) {
      const std::string_view spec = trim(value.substr(6));
      const size_t slash = spec.find('/');
      if (slash == std::string_view::npos) return;
      range_total = parse_u64(spec.substr(slash + 1));
      const std::string_view range = spec.substr(0, slash);
      if (const size_t dash = range.find('-'); dash != std::string_view::npos) {
        range_start = parse_u64(range.substr(0, dash));
      }
    }
  }
};

// One transfer: the state curl's callbacks reach.
struct Transfer {
  CURL* curl = nullptr;
  PartialFile* file = nullptr;
  const DownloadRequest* request = nullptr;
  uint64_t offset = 0;  // the partial's size when the transfer began (the Range asked for)

  ResponseHeaders headers;
  long status = 0;            // of the final response, known once the body starts
  bool body_started = false;  // start_body() ran
  bool body_to_file = false;  // a 200/206 whose body goes to the file
  uint64_t started_at = 0;    // where the body began in the file (0 after a 200)
  uint64_t total = 0;         // whole-file size, 0 while unknown
  Status abort;               // why a callback stopped the transfer (not ok: stop)
  bool cancelled = false;     // progress returned false
  bool wrong_range = false;   // a 206 that does not start at `offset`
  // public_addresses_only: the trusted origin's addresses, and the last address refused
  // ("10.0.0.1, a private address"; "" : none).
  std::vector<ResolvedAddress> trusted;
  std::string refused;

  // Whether a connection to `peer` may be made; records why not.
  bool may_connect(const sockaddr* peer, socklen_t length) {
    if (!request->public_addresses_only) return true;
    const std::optional<std::string> kind = non_public_address_kind(peer, length);
    if (!kind) return true;
    for (const ResolvedAddress& a : trusted) {
      if (same_endpoint(peer, reinterpret_cast<const sockaddr*>(&a.address))) return true;
    }
    refused = address_text(peer, length) + ", a " + *kind + " address";
    return false;
  }

  // Decides, at the first body byte (or at the end for an empty body), where the body goes.
  void start_body() {
    body_started = true;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    if (status == 206) {
      const uint64_t start = headers.range_start.value_or(offset == 0 ? 0 : UINT64_MAX);
      if (start != offset) {
        wrong_range = true;
        return;
      }
      started_at = offset;
      total = headers.range_total.value_or(headers.content_length ? offset + *headers.content_length : 0);
    } else if (status == 200) {
      // The server ignored Range (or none was needed): the body is the whole file.
      if (file->size() > 0) {
        if (Status s = file->truncate(); !s.ok()) {
          abort = s;
          return;
        }
      }
      started_at = 0;
      total = headers.content_length.value_or(0);
    } else {
      return;
    }
    body_to_file = true;
    if (total > file->size()) {
      const uint64_t needed = total - file->size() + request->free_space_reserve;
      if (const auto free = file->free_space(); free && *free < needed) {
        abort = Status::resource_exhausted("not enough free disk space for " + request->dest_path + ": need " +
                                           mib(needed) + ", " + mib(*free) + " free");
      }
    }
  }

  size_t on_body(const char* data, size_t size) {
    if (!body_started) start_body();
    if (!abort.ok() || wrong_range) return 0;  // ends the transfer (CURLE_WRITE_ERROR)
    if (!body_to_file) return 0;               // an error body is not read at all: its status says enough
    if (Status s = file->append(data, size); !s.ok()) {
      abort = s;
      return 0;
    }
    return size;
  }

  bool on_progress() {
    if (request->progress && !request->progress(file->size(), body_to_file ? total : 0)) {
      cancelled = true;
      return false;
    }
    return true;
  }
};

size_t header_callback(char* data, size_t size, size_t n, void* user) {
  try {
    static_cast<Transfer*>(user)->headers.parse_line(std::string_view(data, size * n));
  } catch (...) {}
  return size * n;
}

size_t write_callback(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  try {
    return t->on_body(data, size * n);
  } catch (...) {
    t->abort = Status::internal("out of memory");
    return 0;
  }
}

int progress_callback(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* t = static_cast<Transfer*>(user);
  try {
    return t->on_progress() ? 0 : 1;
  } catch (...) {
    t->cancelled = true;
    return 1;
  }
}

// Every socket curl opens (after DNS, for the URL and each redirect) passes may_connect() first:
// the address checked is the one connected to, whatever name led there.
curl_socket_t open_socket_callback(void* user, curlsocktype purpose, curl_sockaddr* address) {
  auto* t = static_cast<Transfer*>(user);
  try {
    if (purpose == CURLSOCKTYPE_IPCXN && !t->may_connect(&address->addr, address->addrlen)) return CURL_SOCKET_BAD;
  } catch (...) {
    return CURL_SOCKET_BAD;
  }
  return ::socket(address->family, address->socktype | SOCK_CLOEXEC, address->protocol);
}

// How one transfer ended.
struct Outcome {
  enum Kind { Complete, Retry, Fail } kind = Retry;
  Status status;  // why, for Retry and Fail
  uint64_t resumed_from = 0;
};

Outcome retry(std::string message) { return {Outcome::Retry, Status::unavailable(std::move(message))}; }
Outcome fail(Status status) { return {Outcome::Fail, std::move(status)}; }

bool permanent_curl_error(CURLcode rc) {
  switch (rc) {
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_URL_MALFORMAT:
    case CURLE_NOT_BUILT_IN:
    case CURLE_TOO_MANY_REDIRECTS:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_BAD_FUNCTION_ARGUMENT:
      return true;
    default:
      return false;
  }
}

// A non-2xx final status: permanent (Fail) or worth another attempt (Retry).
// The server's error body is never part of the message: it is a stranger's text, and the message
// reaches logs and the hub's API (a replica's state detail).
Outcome http_error(long status, const std::string& url) {
  std::string message = "HTTP " + std::to_string(status) + " from " + url;
  if (status == 404 || status == 410) return fail(Status::not_found(message));
  if (status == 401 || status == 403) {
    return fail(Status(StatusCode::PermissionDenied,
                       message + " (gated or private Hugging Face repositories need HF_TOKEN set to an access token "
                                 "that may read the repository)"));
  }
  if (status >= 400 && status < 500 && status != 408 && status != 429) {
    return fail(Status::invalid_argument(message));
  }
  return retry(message);
}

// Runs one transfer from the partial's current size.
// The request headers of one transfer: the token, and If-Range on a resume.
curl_slist* request_headers(const DownloadRequest& request, uint64_t offset, const std::string& etag) {
  curl_slist* list = nullptr;
  if (!request.bearer_token.empty()) {
    list = curl_slist_append(list, ("Authorization: Bearer " + request.bearer_token).c_str());
  }
  // A strong validator from an earlier attempt: if the file changed since, the server sends it
  // whole (200) instead of a range of the new one.
  if (offset > 0 && !etag.empty() && !etag.starts_with("W/")) {
    list = curl_slist_append(list, ("If-Range: " + etag).c_str());
  }
  return list;
}

void set_options(CURL* c, const DownloadRequest& request, Transfer* t, curl_slist* headers, const std::string& range,
                 char* error_buffer, long stall_seconds) {
  curl_easy_setopt(c, CURLOPT_URL, request.url.c_str());
  // Without a CA file of its own, $SSL_CERT_FILE (the bundle's CA copy) before curl's built-in path,
  // which a phone lacks.
  const std::string ca_file = request.ca_file.empty() ? system_ca_file() : request.ca_file;
  if (!ca_file.empty()) curl_easy_setopt(c, CURLOPT_CAINFO, ca_file.c_str());
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  // Hugging Face resolve URLs redirect to a CDN. libcurl does not send our Authorization header
  // to another host (CURLOPT_UNRESTRICTED_AUTH stays off).
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(c, CURLOPT_MAXREDIRS, 10L);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_USERAGENT, "cellserve/0.1");
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
  // Always ask for a range, even from 0: a 206 carries the whole size in Content-Range, also when
  // the body is chunked (the hub's file endpoint streams large files without Content-Length).
  curl_easy_setopt(c, CURLOPT_RANGE, range.c_str());
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, stall_seconds);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, stall_seconds);
  curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, error_buffer);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, &header_callback);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, t);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, &write_callback);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, t);
  curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, &progress_callback);
  curl_easy_setopt(c, CURLOPT_XFERINFODATA, t);
  curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(c, CURLOPT_OPENSOCKETFUNCTION, &open_socket_callback);
  curl_easy_setopt(c, CURLOPT_OPENSOCKETDATA, t);
}

// What a finished curl_easy_perform() means for the download.
Outcome judge(Transfer& t, CURLcode rc, const char* error_buffer, long stall_seconds) {
  const DownloadRequest& request = *t.request;
  PartialFile& file = *t.file;
  if (t.cancelled) return fail(Status::unavailable("cancelled"));
  if (rc != CURLE_OK && !t.refused.empty()) {
    return fail(
        Status(StatusCode::PermissionDenied, request.url + ": refused to connect to " + t.refused +
                                                 " (downloads a hub names reach public addresses only; the agent's "
                                                 "--allow-private-downloads lifts this)"));
  }
  if (rc == CURLE_OK && !t.body_started && t.abort.ok()) t.start_body();  // an empty body: decide now
  if (!t.abort.ok()) return fail(t.abort);
  if (t.wrong_range) {
    if (Status s = file.truncate(); !s.ok()) return fail(s);
    return retry("the server answered a range other than the one asked for; starting over");
  }
  // A final status that is not the file's: its body was refused unread (so the transfer "failed"
  // with a write error), and the status decides.
  if (t.body_started && !t.body_to_file) {
    if (t.status == 416) {
      // Range not satisfiable: "bytes */size". A partial of exactly that size is the whole file.
      if (t.headers.range_total && *t.headers.range_total == file.size()) return {Outcome::Complete, {}, file.size()};
      if (Status s = file.truncate(); !s.ok()) return fail(s);
      return retry("HTTP 416 from " + request.url + " for a partial file of " + std::to_string(t.offset) +
                   " bytes; starting over");
    }
    return http_error(t.status, request.url);
  }
  if (rc != CURLE_OK) {
    const std::string detail = error_buffer[0] != '\0' ? error_buffer : curl_easy_strerror(rc);
    if (rc == CURLE_OPERATION_TIMEDOUT && t.body_to_file) {
      return retry(request.url + ": no data for " + std::to_string(stall_seconds) + " s (" + detail + ")");
    }
    if (permanent_curl_error(rc)) return fail(Status::invalid_argument(request.url + ": " + detail));
    return retry(request.url + ": " + detail);
  }
  if (t.total > 0 && file.size() > t.total) {
    if (Status s = file.truncate(); !s.ok()) return fail(s);
    return retry(request.url + ": the server sent more than the " + std::to_string(t.total) +
                 " bytes it announced; starting over");
  }
  if (t.total > 0 && file.size() < t.total) {
    return retry(request.url + ": the connection ended after " + std::to_string(file.size()) + " of " +
                 std::to_string(t.total) + " bytes");
  }
  return {Outcome::Complete, {}, t.started_at};
}

// A CURLOPT_RESOLVE entry "host:port:addr,addr" for the URL's host through resolve_host()
// (--dns); "" for an IP literal or a URL curl cannot parse (curl then reports it).
Result<std::string> resolve_entry(const std::string& url) {
  std::unique_ptr<CURLU, decltype(&curl_url_cleanup)> u(curl_url(), &curl_url_cleanup);
  if (!u || curl_url_set(u.get(), CURLUPART_URL, url.c_str(), 0) != CURLUE_OK) return std::string();
  char* host = nullptr;
  char* port = nullptr;
  if (curl_url_get(u.get(), CURLUPART_HOST, &host, 0) != CURLUE_OK) return std::string();
  const std::string name = host;
  curl_free(host);
  if (curl_url_get(u.get(), CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) != CURLUE_OK) return std::string();
  const std::string port_text = port;
  curl_free(port);
  if (name.starts_with('[')) return std::string();  // an IPv6 literal
  int port_number = 0;
  std::from_chars(port_text.data(), port_text.data() + port_text.size(), port_number);
  CS_ASSIGN_OR_RETURN(const std::vector<ResolvedAddress> addresses, resolve_host(name, port_number));
  std::string entry = name + ":" + port_text + ":";
  for (size_t i = 0; i < addresses.size(); ++i) {
    entry += (i ? "," : "") + (addresses[i].family == AF_INET6 ? "[" + addresses[i].text + "]" : addresses[i].text);
  }
  return entry;
}

// The addresses and port of `origin` ("http(s)://host[:port]"); none for "" or a URL curl
// cannot parse.
Result<std::vector<ResolvedAddress>> origin_addresses(const std::string& origin) {
  if (origin.empty()) return std::vector<ResolvedAddress>();
  std::unique_ptr<CURLU, decltype(&curl_url_cleanup)> u(curl_url(), &curl_url_cleanup);
  if (!u || curl_url_set(u.get(), CURLUPART_URL, origin.c_str(), 0) != CURLUE_OK) {
    return std::vector<ResolvedAddress>();
  }
  char* host = nullptr;
  char* port = nullptr;
  if (curl_url_get(u.get(), CURLUPART_HOST, &host, 0) != CURLUE_OK) return std::vector<ResolvedAddress>();
  std::string name = host;
  curl_free(host);
  if (curl_url_get(u.get(), CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) != CURLUE_OK) {
    return std::vector<ResolvedAddress>();
  }
  int port_number = 0;
  std::from_chars(port, port + std::strlen(port), port_number);
  curl_free(port);
  if (name.size() >= 2 && name.front() == '[' && name.back() == ']') name = name.substr(1, name.size() - 2);
  return resolve_host(name, port_number);
}

// Runs one transfer from the partial's current size. `etag` carries the last response's ETag
// from one attempt to the next.
Outcome run_transfer(const DownloadRequest& request, PartialFile& file, std::string* etag) {
  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), &curl_easy_cleanup);
  if (!curl) return fail(Status::internal("curl_easy_init failed"));
  Transfer t;
  t.curl = curl.get();
  t.file = &file;
  t.request = &request;
  t.offset = file.size();
  if (request.public_addresses_only) {
    auto trusted = origin_addresses(request.trusted_origin);
    if (!trusted.ok()) return retry(trusted.status().message());  // DNS may come back
    t.trusted = std::move(trusted).value();
  }
  std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> headers(request_headers(request, t.offset, *etag),
                                                                      &curl_slist_free_all);
  const std::string range = std::to_string(t.offset) + "-";
  char error_buffer[CURL_ERROR_SIZE] = {};
  const long stall = std::max<long>(1, static_cast<long>(request.stall_timeout.count()));
  set_options(curl.get(), request, &t, headers.get(), range, error_buffer, stall);
  std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> resolved(nullptr, &curl_slist_free_all);
  if (!dns_servers().empty()) {
    // --dns: curl's own resolver would ask the system's, which a phone may not have configured.
    // The first host is resolved here; a redirect to another host uses the system's.
    auto entry = resolve_entry(request.url);
    if (!entry.ok()) return retry(entry.status().message());  // DNS may come back
    if (!entry->empty()) {
      resolved.reset(curl_slist_append(nullptr, entry->c_str()));
      curl_easy_setopt(curl.get(), CURLOPT_RESOLVE, resolved.get());
    }
  }
  const CURLcode rc = curl_easy_perform(curl.get());
  if (!t.headers.etag.empty()) *etag = t.headers.etag;
  return judge(t, rc, error_buffer, stall);
}

// Waits `delay` before the next attempt, asking `progress` meanwhile. False when cancelled.
bool backoff(const DownloadRequest& request, std::chrono::milliseconds delay, uint64_t done) {
  const auto deadline = Clock::now() + delay;
  for (;;) {
    if (request.progress && !request.progress(done, 0)) return false;
    const auto now = Clock::now();
    if (now >= deadline) return true;
    std::this_thread::sleep_for(std::min<Clock::duration>(deadline - now, std::chrono::milliseconds(100)));
  }
}

Status sync_directory_of(const std::string& path) {
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Status::internal(dir + ": cannot open: " + std::strerror(errno));
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0 && err != EINVAL) return Status::internal(dir + ": fsync failed: " + std::strerror(err));
  return {};
}

Status validate(const DownloadRequest& r) {
  const auto lower_prefix = [&](std::string_view p) {
    if (r.url.size() < p.size()) return false;
    for (size_t i = 0; i < p.size(); ++i) {
      if (std::tolower(static_cast<unsigned char>(r.url[i])) != p[i]) return false;
    }
    return true;
  };
  if (!lower_prefix("http://") && !lower_prefix("https://")) {
    return Status::invalid_argument("download URL '" + r.url + "': expected http:// or https://");
  }
  if (r.dest_path.empty() || r.dest_path.back() == '/') {
    return Status::invalid_argument("download destination '" + r.dest_path + "' is not a file path");
  }
  if (!r.sha256.empty() && !is_sha256_hex(r.sha256)) {
    return Status::invalid_argument("expected SHA-256 '" + r.sha256 + "' is not 64 hex digits");
  }
  if (r.max_attempts < 1) return Status::invalid_argument("max_attempts must be >= 1");
  if (r.first_backoff.count() < 0) return Status::invalid_argument("first_backoff must be >= 0");
  return {};
}

std::string to_lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Runs transfers until `file` holds the whole file (OK) or a permanent failure, a cancel or
// max_attempts transient failures end the download. Sets attempts and resumed_from.
Status fetch(const DownloadRequest& request, PartialFile& file, DownloadResult* result) {
  init_curl_once();
  std::string etag;
  Status last;
  std::chrono::milliseconds delay = request.first_backoff;
  for (int attempt = 1; attempt <= request.max_attempts; ++attempt) {
    if (attempt > 1) {
      if (!backoff(request, delay, file.size())) return Status::unavailable("cancelled");
      delay *= 2;
    }
    result->attempts = attempt;
    Outcome outcome = run_transfer(request, file, &etag);
    if (outcome.kind == Outcome::Fail) return outcome.status;
    if (outcome.kind == Outcome::Complete) {
      result->resumed_from = outcome.resumed_from;
      return {};
    }
    last = outcome.status;
  }
  return Status::unavailable("download failed after " + std::to_string(request.max_attempts) + " attempts: " +
                             last.message() + (file.size() > 0 ? " (the partial file is kept for resume)" : ""));
}

Result<DownloadResult> download(const DownloadRequest& request) {
  CS_RETURN_IF_ERROR(validate(request));
  const std::string expected = to_lower(request.sha256);
  DownloadResult result;
  result.path = request.dest_path;

  // Already there and verified: nothing to fetch.
  struct stat st {};
  if (!expected.empty() && ::stat(request.dest_path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
    auto digest = sha256_file(request.dest_path);
    if (digest.ok() && *digest == expected) {
      result.bytes = static_cast<uint64_t>(st.st_size);
      result.sha256 = *digest;
      return result;
    }
  }

  std::error_code ec;
  const std::filesystem::path parent = std::filesystem::path(request.dest_path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  if (ec) return Status::internal(parent.string() + ": cannot create the folder: " + ec.message());
  const std::string partial_path = request.dest_path + ".partial";
  CS_ASSIGN_OR_RETURN(std::unique_ptr<PartialFile> file, PartialFile::open(partial_path));

  Status fetched = fetch(request, *file, &result);
  if (!fetched.ok()) {
    if (file->size() == 0) ::unlink(partial_path.c_str());  // nothing worth resuming
    return fetched;
  }

  CS_RETURN_IF_ERROR(file->sync());
  result.bytes = file->size();
  result.sha256 = file->hash().hex_digest();
  file.reset();
  if (!expected.empty() && result.sha256 != expected) {
    ::unlink(partial_path.c_str());
    // Not the digest that came: it would tell whoever reads the error what the URL holds.
    return Status::data_loss("sha256 mismatch: expected " + expected + "; the file fetched from " + request.url +
                             " differs");
  }
  if (::rename(partial_path.c_str(), request.dest_path.c_str()) != 0) {
    return Status::internal(partial_path + " -> " + request.dest_path + ": rename failed: " + std::strerror(errno));
  }
  CS_RETURN_IF_ERROR(sync_directory_of(request.dest_path));
  if (request.progress) request.progress(result.bytes, result.bytes);
  return result;
}

}  // namespace

Result<DownloadResult> download_file(const DownloadRequest& request) {
  try {
    return download(request);
  } catch (const std::exception& e) {
    return Status::internal(std::string("download failed: ") + e.what());
  } catch (...) {
    return Status::internal("download failed");
  }
}

}  // namespace cellserve::fleet
