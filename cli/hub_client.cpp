#include "cli/hub_client.h"

#include <curl/curl.h>

#include <cstdio>
#include <cstdlib>

#include <boost/json.hpp>

namespace cellserve::cli {
namespace {

size_t append(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

}  // namespace

double json_number(const boost::json::value& v) {
  if (v.is_double()) return v.as_double();
  if (v.is_int64()) return static_cast<double>(v.as_int64());
  if (v.is_uint64()) return static_cast<double>(v.as_uint64());
  return 0;
}

double json_number(const boost::json::value* v) { return v == nullptr ? 0 : json_number(*v); }

std::string json_string(const boost::json::object& o, const char* key) {
  const boost::json::value* v = o.if_contains(key);
  return v != nullptr && v->is_string() ? std::string(v->as_string()) : std::string();
}

std::string default_hub_url() {
  const char* env = std::getenv("CELLSERVE_HUB");
  return env != nullptr && *env != '\0' ? env : "http://127.0.0.1:8090";
}

Result<boost::json::value> hub_request(const std::string& hub, const std::string& method, const std::string& path,
                                       const std::string& body) {
  static const bool initialised = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
  if (!initialised) return Status::internal("libcurl could not be initialised");
  CURL* curl = curl_easy_init();
  if (curl == nullptr) return Status::internal("libcurl could not be initialised");
  std::string url = hub;
  while (!url.empty() && url.back() == '/') url.pop_back();
  url += path;
  std::string response;
  curl_slist* headers = curl_slist_append(nullptr, "Content-Type: application/json");
  std::string auth;
  if (const char* key = std::getenv("CELLSERVE_HUB_KEY"); key != nullptr && *key != '\0') {
    auth = std::string("Authorization: Bearer ") + key;
    headers = curl_slist_append(headers, auth.c_str());
  }
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  if (!body.empty()) {
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.c_str());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
  }
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, append);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &response);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT, 30L);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  if (const char* ca = std::getenv("CELLSERVE_HUB_CA"); ca != nullptr && *ca != '\0') {
    curl_easy_setopt(curl, CURLOPT_CAINFO, ca);
  }
  const CURLcode rc = curl_easy_perform(curl);
  long status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  curl_slist_free_all(headers);
  curl_easy_cleanup(curl);
  if (rc != CURLE_OK) return Status::unavailable("hub " + hub + ": " + curl_easy_strerror(rc));
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(response, ec);
  if (status < 200 || status >= 300) {
    std::string message = response.substr(0, 300);
    if (!ec && v.is_object()) {
      if (const auto* e = v.as_object().if_contains("error"); e && e->is_object()) {
        if (const auto* m = e->as_object().if_contains("message"); m && m->is_string())
          message = std::string(m->as_string());
      }
    }
    const StatusCode code = status == 404   ? StatusCode::NotFound
                            : status == 401 ? StatusCode::Unauthenticated
                            : status < 500  ? StatusCode::InvalidArgument
                                            : StatusCode::Unavailable;
    return Status(code, std::to_string(status) + ": " + message);
  }
  if (ec) return Status::unavailable("hub " + hub + ": the answer is not JSON");
  return v;
}

void print_json(const boost::json::value& v) {
  const std::string text = boost::json::serialize(v);
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fputc('\n', stdout);
}

}  // namespace cellserve::cli
