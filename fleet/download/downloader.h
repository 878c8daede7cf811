// Resumable, verified HTTP(S) downloads of model files (libcurl). How agents and `cellserve pull`
// fetch a GGUF: the data goes to "<dest>.partial" and becomes <dest> only once complete and, when
// a SHA-256 is given, verified, so a partial or corrupt file is never found at <dest>.
// docs/pull.md describes resume, retries and verification.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "base/status.h"

namespace cellserve::fleet {

struct DownloadRequest {
  std::string url;           // http:// or https:// (see resolve_model_url for hf://)
  std::string dest_path;     // final path; data goes to dest_path + ".partial" until verified
  std::string sha256;        // expected hex (either case); empty = not verified
  std::string ca_file;       // PEM CA bundle replacing the system's for this download (a hub with a private CA)
  std::string bearer_token;  // sent as "Authorization: Bearer ..." when set (HF_TOKEN); never to another host
  // Called often (from the calling thread) with the bytes in the file so far and the whole size
  // (0 while unknown). Return false to cancel. May be empty.
  std::function<bool(uint64_t done, uint64_t total)> progress;
  int max_attempts = 5;                          // transient failures (drop, 5xx, 408, 429, stall) retry with Range
  std::chrono::milliseconds first_backoff{500};  // wait before the 2nd attempt; doubles each retry
  std::chrono::seconds stall_timeout{30};        // no bytes for this long = a failed attempt
  uint64_t free_space_reserve = 0;  // ResourceExhausted when free space < remaining size + this (size known)
  // Set (agents, unless --allow-private-downloads): every connection, to the URL's host and to
  // each redirect's, must reach a public address (address_policy.h), checked on the address the
  // socket connects to, so a name that resolves or rebinds to a private one is refused too.
  // trusted_origin's own addresses and port are allowed anyway. With a proxy configured
  // ($http_proxy ...) it is the proxy's address that is checked.
  bool public_addresses_only = false;
  std::string trusted_origin;  // "http(s)://host[:port]": the agent's hub, trusted by joining it
};

struct DownloadResult {
  std::string path;           // dest_path
  uint64_t bytes = 0;         // size of the file
  uint64_t resumed_from = 0;  // offset the last transfer started at (0: fetched from the start, or no transfer)
  int attempts = 0;           // transfers tried; 0 when dest_path already held the expected file
  std::string sha256;         // lower-case hex of the file
};

// Downloads request.url to request.dest_path. Blocks; safe to call from several threads for
// different dest_paths; a second call (or process) for a dest_path being downloaded fails at
// once with Unavailable (the partial is locked). Never throws.
//   - dest_path already present with the expected sha256: returns at once, no network.
//   - An existing dest_path + ".partial" is resumed with "Range: bytes=N-": 206 appends, 200
//     (Range ignored) starts over, 416 with the partial at the full size means it is complete.
//   - Transient failures are retried up to max_attempts, resuming each time.
//   - On success the partial is fsync'ed and renamed to dest_path (replacing it).
// Errors: InvalidArgument (bad request, unsupported URL, other 4xx), NotFound (404/410),
// PermissionDenied (401/403; the message mentions HF_TOKEN; or a connection refused by
// public_addresses_only, naming the address and its kind), DataLoss ("sha256 mismatch: expected
// X"; never the digest of what came, which would tell a URL's content to whoever reads the
// error; the partial is deleted so the next call starts from scratch),
// ResourceExhausted (not enough free disk space, or disk full), Unavailable("cancelled") when
// progress returned false (the partial is kept for resume), Unavailable for transient failures
// that outlasted max_attempts (partial kept), Internal for local I/O errors.
Result<DownloadResult> download_file(const DownloadRequest& request);

}  // namespace cellserve::fleet
