#include "fleet/hub/device_headers.h"

#include <algorithm>
#include <cctype>

#include "fleet/signing/answer_signature.h"

namespace cellserve::fleet {
namespace {

// answer_signature_from_json() refuses longer records anyway.
constexpr size_t kMaxSignatureBytes = 8192;

bool all_of(std::string_view s, size_t max, bool (*ok)(unsigned char)) {
  return !s.empty() && s.size() <= max && std::all_of(s.begin(), s.end(), [&](char c) { return ok(c); });
}

bool printable(unsigned char c) { return c >= 0x20 && c < 0x7f; }

bool starts_with_type(std::string_view type, std::string_view want) {
  if (type.size() < want.size()) return false;
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(type[i])) != want[i]) return false;
  }
  return type.size() == want.size() || type[want.size()] == ';' || type[want.size()] == ' ';
}

}  // namespace

net::HeaderList headers_for_user(const net::HeaderList& from_device) {
  net::HeaderList out;
  bool signature_seen = false;
  for (const auto& [raw_name, value] : from_device) {
    std::string name = raw_name;
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    if (name == "retry-after") {
      if (all_of(value, 6, [](unsigned char c) { return std::isdigit(c) != 0; })) out.emplace_back(name, value);
    } else if (name == "cache-control") {
      if (value == "no-cache" || value == "no-store") out.emplace_back(name, value);
    } else if (name == "allow") {
      if (all_of(value, 64, [](unsigned char c) { return std::isupper(c) || c == ',' || c == ' '; })) {
        out.emplace_back(name, value);
      }
    } else if (name == kAnswerSignatureHeader) {
      // One record per answer: a second one could only confuse whoever checks it.
      if (!signature_seen && all_of(value, kMaxSignatureBytes, printable)) out.emplace_back(name, value);
      signature_seen = true;
    }
  }
  return out;
}

std::string signature_header(const net::HeaderList& from_device) {
  for (const auto& [name, value] : headers_for_user(from_device)) {
    if (name == kAnswerSignatureHeader) return value;
  }
  return "";
}

std::string content_type_for_user(std::string_view type) {
  for (const std::string_view ok : {"application/json", "text/event-stream", "text/plain"}) {
    if (starts_with_type(type, ok) && all_of(type, 128, printable)) return std::string(type);
  }
  return "application/octet-stream";
}

}  // namespace cellserve::fleet
