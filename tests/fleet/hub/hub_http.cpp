#include "tests/fleet/hub/hub_http.h"

#include <strings.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>

namespace cellserve::fleet::hub_http {

namespace beast = boost::beast;
namespace http = boost::beast::http;
namespace net = boost::asio;

boost::json::value Reply::json() const { return boost::json::parse(body); }

std::string Reply::header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (k.size() == name.size() && ::strncasecmp(k.data(), name.data(), name.size()) == 0) return v;
  }
  return {};
}

Reply request(int port, http::verb method, const std::string& target, const std::string& body,
              const std::map<std::string, std::string>& headers) {
  net::io_context io;
  net::ip::tcp::socket socket(io);
  socket.connect({net::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)});
  http::request<http::string_body> req{method, target, 11};
  req.set(http::field::host, "127.0.0.1");
  for (const auto& [k, v] : headers) req.set(k, v);
  req.body() = body;
  req.prepare_payload();
  http::write(socket, req);
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  beast::error_code ec;
  http::read(socket, buffer, parser, ec);
  Reply r;
  if (!parser.is_header_done()) return r;
  r.status = static_cast<int>(parser.get().result_int());
  r.body = parser.get().body();
  for (const auto& f : parser.get()) r.headers[std::string(f.name_string())] = std::string(f.value());
  return r;
}

std::string error_message(const Reply& r) { return std::string(r.json().at("error").at("message").as_string()); }

}  // namespace cellserve::fleet::hub_http
