// The hubs an agent may dial (`agent --hub URL1,URL2,...`), and how it waits between dials.
// Several hubs share one fleet (docs/cluster.md, "Agents and several hubs"): the agent holds one
// tunnel, to any of them, and when that tunnel closes or a dial fails it dials the next. A name
// that resolves to several addresses is several hubs too, as a client behind DNS round robin sees
// it. The order starts at a random candidate so that a fleet's agents spread over the hubs.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/status.h"
#include "fleet/agent/hub_dial.h"

namespace cellserve::fleet {

// One hub as given: its origin ("http(s)://host:port", no path or trailing slash: what the tunnel
// signature names and what downloads trust) and where to connect.
struct HubCandidate {
  std::string origin;
  HubAddress address;  // address.connect_host: one of the name's addresses after expand_addresses()
};

// "URL[,URL...]": each entry an http(s)://HOST[:PORT] URL (spaces around entries ignored, repeats
// dropped). InvalidArgument in one line naming the bad entry, or saying the list is empty.
Result<std::vector<HubCandidate>> parse_hub_list(const std::string& list);

// The addresses a host name resolves to, as text ("127.0.0.1", "::1"); fleet/tls/name_resolution.h
// in the agent, a table in tests.
using HubResolver = std::function<Result<std::vector<std::string>>(const std::string& host, int port)>;

// Each plain-http candidate whose name resolves to several addresses becomes one candidate per
// address (same origin; address.connect_host set). IP literals, names with one address and names
// that do not resolve now are kept as they are (the dial resolves them again and says why it
// fails). https candidates are kept whole: the certificate is verified for the name, and
// tls_connect tries each of the name's addresses in turn.
std::vector<HubCandidate> expand_addresses(const std::vector<HubCandidate>& hubs, const HubResolver& resolve);

// The dial order: candidates from a random start, round and round; the list is expanded afresh
// (DNS may have changed) each time it comes round to the start.
class HubRotation {
 public:
  HubRotation(std::vector<HubCandidate> hubs, HubResolver resolve, uint64_t seed);
  const HubCandidate& next();
  size_t size() const { return expanded_.size(); }

 private:
  void expand();
  std::vector<HubCandidate> hubs_;
  HubResolver resolve_;
  uint64_t seed_;
  std::vector<HubCandidate> expanded_;
  size_t start_ = 0;
  size_t taken_ = 0;  // candidates handed out since the last expansion
};

// The wait before the next dial: 0.2 s doubling to 5 s while dials fail or tunnels die young,
// back to 0.2 s after a tunnel that lived. Each wait is drawn in [half, whole] of the step (jitter,
// so a restarted hub is not hit by every device at once); `unit` in [0, 1] picks where.
class DialBackoff {
 public:
  static constexpr std::chrono::milliseconds kFirst{200};
  static constexpr std::chrono::milliseconds kMost{5000};
  // A tunnel up this long was a working connection: its end is no reason to slow down.
  static constexpr std::chrono::milliseconds kLived{10000};

  std::chrono::milliseconds next(double unit);
  // After a tunnel closes that was up for `lived`.
  void tunnel_closed(std::chrono::milliseconds lived);

 private:
  std::chrono::milliseconds step_ = kFirst;
};

}  // namespace cellserve::fleet
