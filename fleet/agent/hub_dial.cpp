#include "fleet/agent/hub_dial.h"

#include <sys/socket.h>
#include <unistd.h>

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>

#include "fleet/attest/attested_key.h"
#include "fleet/spec/agent_protocol.h"
#include "net/fd_stream.h"

namespace cellserve::fleet {
namespace {

namespace beast = boost::beast;
namespace http = boost::beast::http;
using Clock = std::chrono::steady_clock;

// A hub that does not answer a connection within this is skipped for the next one in the list.
constexpr std::chrono::seconds kConnectTimeout{5};

// A connection to the hub; over TLS, a socket carrying the decrypted stream (fleet/tls).
Result<int> connect_to(const HubAddress& hub) {
  if (!hub.tls) {
    auto fd = connect_tcp(hub.connect_host.empty() ? hub.host : hub.connect_host, hub.port, kConnectTimeout);
    if (!fd.ok()) return Status::unavailable("the hub: " + fd.status().message());
    return fd;
  }
  if (!hub.tls_context) return Status::internal("https hub without a TLS context");
  return tls_connect(hub.host, hub.port, hub.tls_context, kConnectTimeout);
}

// One request on `fd`; the response head and body, with bytes past it left in `buffer`.
Result<http::response<http::string_body>> exchange(int fd, http::request<http::string_body>& req,
                                                   beast::flat_buffer& buffer, std::chrono::seconds timeout) {
  net::FdStream stream(fd);
  stream.set_read_deadline(Clock::now() + timeout);
  beast::error_code ec;
  http::write(stream, req, ec);
  if (ec) return Status::unavailable("hub: " + ec.message());
  http::response_parser<http::string_body> parser;
  parser.body_limit(1 << 20);
  http::read(stream, buffer, parser, ec);
  if (ec) return Status::unavailable("hub: " + ec.message());
  return parser.release();
}

std::string error_message(const http::response<http::string_body>& res) {
  auto v = parse_json(res.body(), "hub");
  if (v.ok() && v->is_object()) {
    if (const auto* e = v->as_object().if_contains("error"); e && e->is_object()) {
      if (const auto* m = e->as_object().if_contains("message"); m && m->is_string())
        return std::string(m->as_string());
    }
  }
  return res.body().substr(0, 200);
}

}  // namespace

Result<HubAddress> parse_hub_url(const std::string& url) {
  HubAddress a;
  a.tls = url.starts_with("https://");
  if (!a.tls && !url.starts_with("http://")) {
    return Status::invalid_argument("--hub " + url + ": expected http(s)://HOST:PORT");
  }
  std::string rest = url.substr(a.tls ? 8 : 7);
  if (const size_t slash = rest.find('/'); slash != std::string::npos) rest.resize(slash);
  const size_t colon = rest.rfind(':');
  if (colon == std::string::npos) {
    a.host = rest;
    a.port = a.tls ? 443 : 80;
  } else {
    a.host = rest.substr(0, colon);
    try {
      size_t used = 0;
      a.port = std::stoi(rest.substr(colon + 1), &used);
      if (used != rest.size() - colon - 1) a.port = -1;
    } catch (...) {
      a.port = -1;
    }
  }
  if (a.host.empty() || a.port <= 0 || a.port > 65535)
    return Status::invalid_argument("--hub " + url + ": bad host or port");
  return a;
}

Result<DialedTunnel> dial_hub(const HubAddress& hub, const Identity& identity, std::chrono::seconds timeout,
                              const std::string& enroll_token, const ChallengeHook& on_challenge) {
  const std::string host = hub.host + ":" + std::to_string(hub.port);
  std::string challenge;
  {
    CS_ASSIGN_OR_RETURN(const int fd, connect_to(hub));
    http::request<http::string_body> req{http::verb::get, std::string(kChallengePath), 11};
    req.set(http::field::host, host);
    req.set(http::field::connection, "close");
    beast::flat_buffer buffer;
    auto res = exchange(fd, req, buffer, timeout);
    ::close(fd);
    if (!res.ok()) return res.status();
    if (res->result_int() != 200)
      return Status::unavailable("hub challenge: " + std::to_string(res->result_int()) + " " + error_message(*res));
    auto v = parse_json(res->body(), "hub challenge");
    if (!v.ok() || !v->is_object() || !v->as_object().contains("challenge") ||
        !v->as_object().at("challenge").is_string()) {
      return Status::unavailable("hub challenge: unexpected answer");
    }
    challenge = std::string(v->as_object().at("challenge").as_string());
    if (!valid_challenge(challenge)) return Status::unavailable("hub challenge: not 64 hex digits; not signed");
  }
  const std::string origin = hub_origin(hub.tls, hub.host, hub.port);
  const std::string attested_signature = on_challenge ? on_challenge(challenge, origin) : std::string();
  CS_ASSIGN_OR_RETURN(const int fd, connect_to(hub));
  http::request<http::string_body> req{http::verb::get, std::string(kTunnelPath), 11};
  req.set(http::field::host, host);
  req.set(http::field::connection, "Upgrade");
  req.set(http::field::upgrade, std::string(kTunnelProtocol));
  req.set("X-Cellserve-Agent", identity.id());
  req.set("X-Cellserve-Challenge", challenge);
  req.set("X-Cellserve-Origin", origin);
  if (!attested_signature.empty()) req.set(attest::kAttestedSignatureHeader, attested_signature);
  req.set("X-Cellserve-Signature", identity.sign(tunnel_signature_message(origin, challenge)));
  if (!enroll_token.empty()) req.set("X-Cellserve-Enroll", enroll_token);
  beast::flat_buffer buffer;
  auto res = exchange(fd, req, buffer, timeout);
  if (!res.ok()) {
    ::close(fd);
    return res.status();
  }
  if (res->result_int() != 101) {
    ::close(fd);
    const std::string why = std::to_string(res->result_int()) + " " + error_message(*res);
    if (res->result_int() == 401) return Status(StatusCode::Unauthenticated, "hub refused the tunnel: " + why);
    if (res->result_int() == 403) return Status(StatusCode::PermissionDenied, "hub refused the tunnel: " + why);
    return Status::unavailable("hub refused the tunnel: " + why);
  }
  DialedTunnel t;
  t.fd = fd;
  const auto data = buffer.data();
  t.initial_bytes.assign(static_cast<const char*>(data.data()), data.size());
  return t;
}

}  // namespace cellserve::fleet
