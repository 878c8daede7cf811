// One HTTP/1.1 request to a hub on 127.0.0.1, as a plain client sends it, for the hub tests.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include <boost/beast/http/verb.hpp>
#include <boost/json/value.hpp>

namespace cellserve::fleet::hub_http {

struct Reply {
  int status = 0;  // 0: no answer was read
  std::string body;
  std::map<std::string, std::string> headers;  // names as the hub sent them

  boost::json::value json() const;
  // The header's value, its name compared case-insensitively ("" : absent).
  std::string header(std::string_view name) const;
};

Reply request(int port, boost::beast::http::verb method, const std::string& target, const std::string& body = {},
              const std::map<std::string, std::string>& headers = {});

// The message of an OpenAI-style error body.
std::string error_message(const Reply& r);

}  // namespace cellserve::fleet::hub_http
