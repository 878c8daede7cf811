#include "net/request_timeout.h"

#include <charconv>
#include <string>

namespace cellserve::net {

namespace {

// A hostile value is quote_for_message short and printable: it goes into a JSON error body.
std::string quote_for_message(std::string_view text) {
  constexpr size_t kShown = 32;
  std::string out;
  for (char c : text.substr(0, kShown)) out += c >= 0x20 && c < 0x7f ? c : '?';
  if (text.size() > kShown) out += "...";
  return out;
}

}  // namespace

Result<std::optional<std::chrono::duration<double>>> request_timeout(const HttpRequest& req) {
  const auto it = req.headers.find("x-request-timeout");
  if (it == req.headers.end()) return std::optional<std::chrono::duration<double>>();
  const std::string& text = it->second;
  double seconds = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || !(seconds > 0) ||
      !(seconds <= kMaxRequestTimeoutSeconds)) {
    return Status::invalid_argument(std::string(kRequestTimeoutHeader) +
                                    " must be a number of seconds in (0, 86400], not '" + quote_for_message(text) +
                                    "'");
  }
  return std::optional(std::chrono::duration<double>(seconds));
}

}  // namespace cellserve::net
