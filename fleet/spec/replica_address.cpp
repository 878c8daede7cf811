#include "fleet/spec/replica_address.h"

namespace cellserve::fleet {
namespace {

constexpr size_t kMaxNameBytes = 40;
constexpr size_t kMaxIndexDigits = 4;

std::optional<int> parse_index(std::string_view s) {
  if (s.empty() || s.size() > kMaxIndexDigits) return std::nullopt;
  int n = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + (c - '0');
  }
  return n;
}

}  // namespace

bool valid_deployment_name(std::string_view s) {
  if (s.empty() || s.size() > kMaxNameBytes || s.front() == '-' || s.back() == '-') return false;
  for (char c : s) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  }
  return true;
}

std::optional<ReplicaAddress> replica_address(const net::PathParams& params) {
  const std::string& name = params.get("deployment");
  const std::optional<int> index = parse_index(params.get("index"));
  if (!valid_deployment_name(name) || !index) return std::nullopt;
  const std::string& rest = params.get("rest");
  return ReplicaAddress{name, *index, rest.empty() ? std::string("/") : rest};
}

std::string replica_path(std::string_view deployment, int index, std::string_view rest) {
  std::string path = "/d/";
  path += deployment;
  path += "/r/";
  path += std::to_string(index);
  path += rest;
  return path;
}

std::optional<ReplicaAddress> replica_address_from_path(std::string_view path) {
  if (!path.starts_with("/d/")) return std::nullopt;
  path.remove_prefix(3);
  const size_t slash = path.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  const std::string_view name = path.substr(0, slash);
  path.remove_prefix(slash);
  if (!path.starts_with("/r/")) return std::nullopt;
  path.remove_prefix(3);
  const size_t end = path.find_first_of("/?");
  const std::optional<int> index = parse_index(path.substr(0, end));
  if (!valid_deployment_name(name) || !index) return std::nullopt;
  const std::string_view rest = end == std::string_view::npos ? std::string_view() : path.substr(end);
  return ReplicaAddress{std::string(name), *index, rest.empty() ? std::string("/") : std::string(rest)};
}

std::optional<ReplicaAddress> replica_address_from_host_label(std::string_view label) {
  const size_t dash = label.rfind('-');
  if (dash == std::string_view::npos) return std::nullopt;
  const std::string_view name = label.substr(0, dash);
  const std::optional<int> index = parse_index(label.substr(dash + 1));
  if (!valid_deployment_name(name) || !index) return std::nullopt;
  return ReplicaAddress{std::string(name), *index, ""};
}

}  // namespace cellserve::fleet
