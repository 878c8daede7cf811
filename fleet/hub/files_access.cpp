#include "fleet/hub/files_access.h"

#include <cctype>
#include <optional>
#include <vector>

#include "fleet/spec/deployment_spec.h"

namespace cellserve::fleet {
namespace {

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// `s` percent-decoded; nullopt for a bad escape or an encoded NUL (as the file endpoint decodes).
std::optional<std::string> percent_decoded(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out.push_back(s[i]);
      continue;
    }
    if (i + 2 >= s.size()) return std::nullopt;
    const int hi = hex_digit(s[i + 1]), lo = hex_digit(s[i + 2]);
    if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) return std::nullopt;
    out.push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return out;
}

bool starts_with_ci(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(s[i])) != prefix[i]) return false;
  }
  return true;
}

// The files a replica row makes its device fetch: its model and each adapter.
std::vector<std::string> row_urls(const Replica& r) {
  std::vector<std::string> urls = {r.serving.model_url};
  for (const std::string& text : r.serving.engine.lora) {
    if (auto ref = decode_lora_ref(text); ref.ok()) urls.push_back(ref->url);
  }
  return urls;
}

}  // namespace

std::string decoded_url_path(std::string_view url) {
  size_t scheme = 0;
  if (starts_with_ci(url, "http://")) {
    scheme = 7;
  } else if (starts_with_ci(url, "https://")) {
    scheme = 8;
  } else {
    return {};
  }
  std::string_view rest = url.substr(scheme);
  rest = rest.substr(0, rest.find_first_of("?#"));
  const size_t slash = rest.find('/');
  if (slash == std::string_view::npos) return {};
  return percent_decoded(rest.substr(slash)).value_or(std::string());
}

Status device_may_fetch(Store& store, const std::string& processor_id, std::string_view request_path) {
  const auto denied = [](const std::string& why) { return Status(StatusCode::PermissionDenied, why); };
  auto processor = store.processor(processor_id);
  if (!processor.ok()) return processor.status();
  if (!processor->has_value() || (*processor)->enrollment != Enrollment::Enrolled) {
    return denied("this download token's device is not enrolled");
  }
  const std::optional<std::string> wanted = percent_decoded(request_path);
  if (!wanted || wanted->empty()) return denied("no replica assigned to this device names this file");
  auto rows = store.replicas("");
  if (!rows.ok()) return rows.status();
  for (const Replica& r : *rows) {
    // What the device is told to load: the rows its assignment push carries (reconcile.cpp).
    if (r.processor_id != processor_id || r.state == ReplicaState::Offline) continue;
    for (const std::string& url : row_urls(r)) {
      // Equal, or ending in it: a hub behind a reverse proxy that adds a prefix
      // (https://example.com/hub/files/a.gguf reaches the hub as /files/a.gguf).
      if (decoded_url_path(url).ends_with(*wanted)) return {};
    }
  }
  return denied("no replica assigned to this device names this file");
}

}  // namespace cellserve::fleet
