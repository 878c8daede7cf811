#include "fleet/hub/peer_link_dial.h"

#include <unistd.h>

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>

#include "fleet/crypto/identity.h"
#include "net/fd_stream.h"

namespace cellserve::fleet {
namespace {

namespace beast = boost::beast;
namespace http = boost::beast::http;
using SteadyClock = std::chrono::steady_clock;

Result<int> connect_to(const PeerAddress& peer, const PeerDialer& dialer) {
  if (!peer.tls) {
    auto fd = connect_tcp(peer.host, peer.port, dialer.timeout);
    if (!fd.ok()) return Status::unavailable("peer hub: " + fd.status().message());
    return fd;
  }
  if (!dialer.tls) return Status::unavailable("peer hub is https but this hub has no TLS client context");
  const auto seconds = std::max<int64_t>(1, std::chrono::duration_cast<std::chrono::seconds>(dialer.timeout).count());
  return tls_connect(peer.host, peer.port, dialer.tls, std::chrono::seconds(seconds));
}

// One request on `fd` within the dialer's deadline; bytes past the response stay in `buffer`.
Result<http::response<http::string_body>> exchange(int fd, http::request<http::string_body>& req,
                                                   beast::flat_buffer& buffer, std::chrono::milliseconds timeout) {
  net::FdStream stream(fd);
  stream.set_read_deadline(SteadyClock::now() + timeout);
  beast::error_code ec;
  http::write(stream, req, ec);
  if (ec) return Status::unavailable("peer hub: " + ec.message());
  http::response_parser<http::string_body> parser;
  parser.header_limit(16 << 10);
  parser.body_limit(64 << 10);  // a challenge or an error: small
  http::read(stream, buffer, parser, ec);
  if (ec) return Status::unavailable("peer hub: " + ec.message());
  return parser.release();
}

std::string host_header(const PeerAddress& peer) { return peer.host + ":" + std::to_string(peer.port); }

}  // namespace

Result<PeerAddress> parse_peer_url(const std::string& url) {
  PeerAddress a;
  a.tls = url.starts_with("https://");
  if (!a.tls && !url.starts_with("http://")) {
    return Status::invalid_argument("peer URL " + url.substr(0, 200) + ": expected http(s)://HOST:PORT");
  }
  std::string rest = url.substr(a.tls ? 8 : 7);
  if (const size_t slash = rest.find('/'); slash != std::string::npos) rest.resize(slash);
  a.port = a.tls ? 443 : 80;
  const size_t colon = rest.rfind(':');
  const size_t bracket = rest.rfind(']');
  if (colon != std::string::npos && (bracket == std::string::npos || colon > bracket)) {
    const std::string digits = rest.substr(colon + 1);
    a.port = digits.empty() || digits.size() > 5 || digits.find_first_not_of("0123456789") != std::string::npos
                 ? -1
                 : std::stoi(digits);
    rest.resize(colon);
  }
  if (rest.size() > 2 && rest.front() == '[' && rest.back() == ']') rest = rest.substr(1, rest.size() - 2);
  a.host = rest;
  if (a.host.empty() || a.port <= 0 || a.port > 65535) {
    return Status::invalid_argument("peer URL " + url.substr(0, 200) + ": bad host or port");
  }
  return a;
}

Result<std::string> fetch_link_challenge(const PeerAddress& peer, const PeerDialer& dialer) {
  CS_ASSIGN_OR_RETURN(const int fd, connect_to(peer, dialer));
  http::request<http::string_body> req{http::verb::get, std::string(kHubLinkChallengePath), 11};
  req.set(http::field::host, host_header(peer));
  req.set(http::field::connection, "close");
  beast::flat_buffer buffer;
  auto res = exchange(fd, req, buffer, dialer.timeout);
  ::close(fd);
  if (!res.ok()) return res.status();
  if (res->result_int() != 200) {
    return Status::unavailable("peer hub challenge: HTTP " + std::to_string(res->result_int()));
  }
  boost::system::error_code ec;
  const boost::json::value v = boost::json::parse(res->body(), ec);
  const boost::json::value* c = !ec && v.is_object() ? v.as_object().if_contains("challenge") : nullptr;
  if (c == nullptr || !c->is_string() || !valid_link_token(c->as_string())) {
    return Status::unavailable("peer hub challenge: not 64 hex digits");
  }
  return std::string(c->as_string());
}

Result<DialedLink> request_link(const PeerAddress& peer, const PeerDialer& dialer, const std::string& link_key,
                                const LinkHandshake& h, const std::string& proof) {
  CS_ASSIGN_OR_RETURN(const int fd, connect_to(peer, dialer));
  http::request<http::string_body> req{http::verb::get, std::string(kHubLinkPath), 11};
  req.set(http::field::host, host_header(peer));
  req.set(http::field::connection, "Upgrade");
  req.set(http::field::upgrade, std::string(kHubLinkProtocol));
  req.set(std::string(kHubIdHeader), h.dialer_id);
  req.set(std::string(kPeerIdHeader), h.listener_id);
  req.set(std::string(kLinkChallengeHeader), h.challenge);
  req.set(std::string(kLinkNonceHeader), h.nonce);
  req.set(std::string(kLinkProofHeader), proof);
  beast::flat_buffer buffer;
  auto res = exchange(fd, req, buffer, dialer.timeout);
  if (!res.ok() || res->result_int() != 101) {
    ::close(fd);
    if (!res.ok()) return res.status();
    const std::string why = "peer hub refused the link: HTTP " + std::to_string(res->result_int());
    if (res->result_int() == 401) return Status(StatusCode::Unauthenticated, why);
    return Status::unavailable(why);
  }
  // A "hub" that upgrades without knowing the cluster key cannot make this proof: it is never
  // served (its requests would reach this hub's agents).
  const auto their_proof = res->find(std::string(kLinkProofHeader));
  if (their_proof == res->end() || !listener_proof_valid(link_key, h, their_proof->value())) {
    ::close(fd);
    return Status(StatusCode::Unauthenticated, "peer hub accepted the link without proving the cluster key");
  }
  DialedLink link;
  link.fd = fd;
  const auto data = buffer.data();
  link.initial_bytes.assign(static_cast<const char*>(data.data()), data.size());
  return link;
}

Result<DialedLink> dial_peer(const PeerAddress& peer, const PeerDialer& dialer, const std::string& link_key,
                             const std::string& self_id, const std::string& peer_id) {
  LinkHandshake h;
  h.dialer_id = self_id;
  h.listener_id = peer_id;
  CS_ASSIGN_OR_RETURN(h.challenge, fetch_link_challenge(peer, dialer));
  h.nonce = random_hex(32);
  return request_link(peer, dialer, link_key, h, dialer_proof(link_key, h));
}

}  // namespace cellserve::fleet
