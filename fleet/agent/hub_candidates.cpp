#include "fleet/agent/hub_candidates.h"

#include <algorithm>
#include <random>

#include "fleet/spec/agent_protocol.h"

namespace cellserve::fleet {
namespace {

std::string trimmed(const std::string& s) {
  const size_t first = s.find_first_not_of(" \t");
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(" \t") - first + 1);
}

bool is_ip_literal(const std::string& host) {
  return host.find(':') != std::string::npos || host.find_first_not_of("0123456789.") == std::string::npos;
}

}  // namespace

Result<std::vector<HubCandidate>> parse_hub_list(const std::string& list) {
  if (trimmed(list).empty()) return Status::invalid_argument("--hub: no hub given");
  std::vector<HubCandidate> hubs;
  size_t begin = 0;
  for (;;) {
    const size_t comma = list.find(',', begin);
    const std::string entry =
        trimmed(list.substr(begin, comma == std::string::npos ? std::string::npos : comma - begin));
    if (entry.empty()) return Status::invalid_argument("--hub: an empty entry in '" + list + "'");
    auto address = parse_hub_url(entry);
    if (!address.ok()) return address.status();  // names the entry
    HubCandidate c{hub_origin(address->tls, address->host, address->port), std::move(address).value()};
    const bool repeated =
        std::any_of(hubs.begin(), hubs.end(), [&](const HubCandidate& h) { return h.origin == c.origin; });
    if (!repeated) hubs.push_back(std::move(c));
    if (comma == std::string::npos) break;
    begin = comma + 1;
  }
  return hubs;
}

std::vector<HubCandidate> expand_addresses(const std::vector<HubCandidate>& hubs, const HubResolver& resolve) {
  std::vector<HubCandidate> out;
  for (const HubCandidate& hub : hubs) {
    if (hub.address.tls || is_ip_literal(hub.address.host) || !resolve) {
      out.push_back(hub);
      continue;
    }
    auto addresses = resolve(hub.address.host, hub.address.port);
    if (!addresses.ok() || addresses->size() < 2) {
      out.push_back(hub);
      continue;
    }
    for (const std::string& a : *addresses) {
      HubCandidate one = hub;
      one.address.connect_host = a;
      out.push_back(std::move(one));
    }
  }
  return out;
}

HubRotation::HubRotation(std::vector<HubCandidate> hubs, HubResolver resolve, uint64_t seed)
    : hubs_(std::move(hubs)), resolve_(std::move(resolve)), seed_(seed) {
  expand();
}

void HubRotation::expand() {
  expanded_ = expand_addresses(hubs_, resolve_);
  if (expanded_.empty()) expanded_ = hubs_;
  std::mt19937_64 rng(seed_++);
  start_ = expanded_.empty() ? 0 : std::uniform_int_distribution<size_t>(0, expanded_.size() - 1)(rng);
  taken_ = 0;
}

const HubCandidate& HubRotation::next() {
  if (taken_ == expanded_.size()) expand();
  return expanded_[(start_ + taken_++) % expanded_.size()];
}

std::chrono::milliseconds DialBackoff::next(double unit) {
  unit = std::clamp(unit, 0.0, 1.0);
  const auto wait =
      step_ / 2 + std::chrono::milliseconds(static_cast<int64_t>(unit * static_cast<double>(step_.count() / 2)));
  step_ = std::min(step_ * 2, kMost);
  return wait;
}

void DialBackoff::tunnel_closed(std::chrono::milliseconds lived) {
  if (lived >= kLived) step_ = kFirst;
}

}  // namespace cellserve::fleet
