// Model URLs: plain http(s) URLs and Hugging Face shorthands (hf://owner/repo[@revision]/file),
// and where a downloaded model lives in a cache folder.
#pragma once

#include <string>

#include "base/status.h"

namespace cellserve::fleet {

// The Hugging Face base URL: $HF_ENDPOINT without a trailing '/' when set and non-empty (as
// huggingface_hub reads it), else "https://huggingface.co".
std::string hf_endpoint();

// Returns the URL to download `url` from:
//   http://... and https://...          unchanged
//   hf://owner/repo/path/file.gguf      <hf_endpoint()>/owner/repo/resolve/main/path/file.gguf
//   hf://owner/repo@rev/path/file.gguf  <hf_endpoint()>/owner/repo/resolve/rev/path/file.gguf
// The file path is percent-encoded where needed. InvalidArgument, naming the problem, for any
// other scheme, a missing host, owner, repo, revision or file, or a ".." path segment.
Result<std::string> resolve_model_url(const std::string& url);

// True when `url` (as given, before resolve_model_url) is served by Hugging Face: an hf:// URL,
// or an http(s) URL on huggingface.co, hf.co or the host of $HF_ENDPOINT. The caller sends
// $HF_TOKEN with those only.
bool is_huggingface_url(const std::string& url);

// A stable path in `cache_dir` for the model at `url` (as given, before resolve_model_url):
//   hf://owner/repo[@rev]/a/b.gguf and https://huggingface.co/owner/repo/resolve/rev/a/b.gguf
//       -> <cache_dir>/hf/owner/repo/<rev, default main>/a/b.gguf
//   http(s)://host[:port]/a/b.gguf   -> <cache_dir>/<host>[_port]/a/b.gguf
// Every path segment is reduced to [A-Za-z0-9._-] (others become '_'; "." and ".." become "_"),
// so the result never leaves cache_dir. A URL with a query string gets "-<8 hex of its SHA-256>"
// inserted before the file name's extension so different queries do not share a file. Pure:
// touches no file.
std::string cache_path_for(const std::string& cache_dir, const std::string& url);

}  // namespace cellserve::fleet
