#include "fleet/hub/files_access.h"

#include <optional>
#include <vector>

#include "fleet/spec/deployment_spec.h"
#include "net/url_text.h"

namespace cellserve::fleet {
namespace {

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
  if (net::starts_with_nocase(url, "http://")) {
    scheme = 7;
  } else if (net::starts_with_nocase(url, "https://")) {
    scheme = 8;
  } else {
    return {};
  }
  std::string_view rest = url.substr(scheme);
  rest = rest.substr(0, rest.find_first_of("?#"));
  const size_t slash = rest.find('/');
  if (slash == std::string_view::npos) return {};
  return net::percent_decode(rest.substr(slash)).value_or(std::string());
}

Status device_may_fetch(Store& store, const std::string& processor_id, std::string_view request_path) {
  const auto denied = [](const std::string& why) { return Status(StatusCode::PermissionDenied, why); };
  auto processor = store.processor(processor_id);
  if (!processor.ok()) return processor.status();
  if (!processor->has_value() || (*processor)->enrollment != Enrollment::Enrolled) {
    return denied("this download token's device is not enrolled");
  }
  const std::optional<std::string> wanted = net::percent_decode(request_path);
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
