#include "fleet/download/model_url.h"

#include <cctype>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "fleet/crypto/sha256.h"
#include "net/url_text.h"

namespace cellserve::fleet {
namespace {

constexpr std::string_view kHfScheme = "hf://";

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (;;) {
    const size_t end = s.find(sep, start);
    parts.emplace_back(s.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}

// Percent-encodes everything but RFC 3986 unreserved characters and '/'.
std::string encode_path(std::string_view path) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (const char ch : path) {
    const auto c = static_cast<unsigned char>(ch);
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~' || c == '/') {
      out.push_back(ch);
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

// A path segment reduced to a safe file name.
std::string sanitize_segment(std::string_view s) {
  if (s == "." || s == "..") return "_";
  std::string out;
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    out.push_back(std::isalnum(c) || c == '.' || c == '_' || c == '-' ? ch : '_');
  }
  return out;
}

struct HfRef {
  std::string owner, repo, revision, file;  // file: "a/b.gguf"
};

// Parses "owner/repo[@rev]/path/to/file" (the part after hf://).
Result<HfRef> parse_hf(std::string_view rest, const std::string& url) {
  const auto bad = [&](const std::string& why) {
    return Status::invalid_argument("model URL '" + url + "': " + why +
                                    " (expected hf://owner/repo[@revision]/path/to/file.gguf)");
  };
  std::vector<std::string> parts = split(rest, '/');
  if (parts.size() < 3) return bad("missing owner, repository or file");
  HfRef ref;
  ref.owner = parts[0];
  std::string repo = parts[1];
  ref.revision = "main";
  if (const size_t at = repo.find('@'); at != std::string::npos) {
    ref.revision = repo.substr(at + 1);
    repo.resize(at);
    if (ref.revision.empty()) return bad("empty revision after '@'");
  }
  ref.repo = repo;
  if (ref.owner.empty() || ref.repo.empty()) return bad("empty owner or repository");
  for (size_t i = 2; i < parts.size(); ++i) {
    if (parts[i].empty() || parts[i] == "." || parts[i] == "..") return bad("bad file path");
    ref.file += (i > 2 ? "/" : "") + parts[i];
  }
  return ref;
}

// Splits an http(s) URL into lower-cased authority and path (without query or fragment).
// Returns false when there is no host.
bool split_http(std::string_view url, std::string* authority, std::string* path, std::string* query) {
  const size_t scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos) return false;
  std::string_view rest = url.substr(scheme_end + 3);
  if (const size_t hash = rest.find('#'); hash != std::string_view::npos) rest = rest.substr(0, hash);
  const size_t slash = rest.find_first_of("/?");
  std::string_view auth = rest.substr(0, slash);
  if (const size_t at = auth.rfind('@'); at != std::string_view::npos) auth = auth.substr(at + 1);  // user:pass@
  *authority = lower(auth);
  std::string_view tail = slash == std::string_view::npos ? std::string_view() : rest.substr(slash);
  const size_t q = tail.find('?');
  *path = std::string(tail.substr(0, q));
  *query = q == std::string_view::npos ? std::string() : std::string(tail.substr(q + 1));
  return !authority->empty();
}

std::string host_of(const std::string& authority) {
  if (!authority.empty() && authority[0] == '[') return authority.substr(0, authority.find(']') + 1);
  return authority.substr(0, authority.find(':'));
}

bool is_hf_host(const std::string& host) {
  if (host == "huggingface.co" || host == "hf.co") return true;
  std::string authority, path, query;
  return std::getenv("HF_ENDPOINT") != nullptr && split_http(hf_endpoint(), &authority, &path, &query) &&
         host == host_of(authority);
}

}  // namespace

std::string hf_endpoint() {
  const char* env = std::getenv("HF_ENDPOINT");
  std::string base = env != nullptr && *env != '\0' ? env : "https://huggingface.co";
  while (!base.empty() && base.back() == '/') base.pop_back();
  return base;
}

Result<std::string> resolve_model_url(const std::string& url) {
  if (net::starts_with_nocase(url, "http://") || net::starts_with_nocase(url, "https://")) {
    std::string authority, path, query;
    if (!split_http(url, &authority, &path, &query)) {
      return Status::invalid_argument("model URL '" + url +
                                      "': missing host (expected http://, https:// or "
                                      "hf://owner/repo[@revision]/path/to/file.gguf)");
    }
    return url;
  }
  if (net::starts_with_nocase(url, kHfScheme)) {
    CS_ASSIGN_OR_RETURN(const HfRef ref, parse_hf(std::string_view(url).substr(kHfScheme.size()), url));
    return hf_endpoint() + "/" + encode_path(ref.owner) + "/" + encode_path(ref.repo) + "/resolve/" +
           encode_path(ref.revision) + "/" + encode_path(ref.file);
  }
  return Status::invalid_argument("model URL '" + url +
                                  "': expected http://, https:// or hf://owner/repo[@revision]/path/to/file.gguf");
}

bool is_huggingface_url(const std::string& url) {
  if (net::starts_with_nocase(url, kHfScheme)) return true;
  if (!net::starts_with_nocase(url, "http://") && !net::starts_with_nocase(url, "https://")) return false;
  std::string authority, path, query;
  return split_http(url, &authority, &path, &query) && is_hf_host(host_of(authority));
}

std::string cache_path_for(const std::string& cache_dir, const std::string& url) {
  std::vector<std::string> segments;
  std::string query;
  if (net::starts_with_nocase(url, kHfScheme)) {
    auto ref = parse_hf(std::string_view(url).substr(kHfScheme.size()), url);
    if (ref.ok()) {
      segments = {"hf", ref->owner, ref->repo, ref->revision};
      for (std::string& s : split(ref->file, '/')) segments.push_back(std::move(s));
    } else {
      segments = {"hf", "invalid"};
      query = url;
    }
  } else {
    std::string authority, path;
    if (!split_http(url, &authority, &path, &query)) authority = "invalid";
    std::vector<std::string> parts = split(path, '/');
    std::erase_if(parts, [](const std::string& s) { return s.empty(); });
    // https://huggingface.co/owner/repo/resolve/rev/file: the same place as hf://owner/repo@rev/file.
    if (is_hf_host(host_of(authority)) && parts.size() >= 5 && parts[2] == "resolve") {
      segments = {"hf", parts[0], parts[1], parts[3]};
      segments.insert(segments.end(), parts.begin() + 4, parts.end());
    } else {
      std::string host = authority;
      for (char& c : host) c = c == ':' ? '_' : c;
      segments = {host};
      segments.insert(segments.end(), parts.begin(), parts.end());
      if (segments.size() == 1) segments.push_back("index");
    }
  }
  if (!query.empty()) {
    Sha256 h;
    h.update(url);
    std::string& name = segments.back();
    const size_t dot = name.rfind('.');
    name.insert(dot == std::string::npos || dot == 0 ? name.size() : dot, "-" + h.hex_digest().substr(0, 8));
  }
  std::string out = cache_dir;
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  for (const std::string& s : segments) out += "/" + sanitize_segment(s);
  return out;
}

}  // namespace cellserve::fleet
