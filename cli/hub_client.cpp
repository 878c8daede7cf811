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

namespace {

// One request: `prepare` sets the method and body; the answer's body goes to `sink` (a string,
// or a FILE* for downloads). Returns the HTTP status, or the transport's error.
struct Call {
  std::string url;
  std::string auth;
  curl_slist* headers = nullptr;
  CURL* curl = nullptr;
  Call(const std::string& hub, const std::string& path, const std::string& key) {
    url = hub;
    while (!url.empty() && url.back() == '/') url.pop_back();
    url += path;
    curl = curl_easy_init();
    if (!key.empty()) {
      auth = "Authorization: Bearer " + key;
      headers = curl_slist_append(headers, auth.c_str());
    }
  }
  ~Call() {
    curl_slist_free_all(headers);
    if (curl != nullptr) curl_easy_cleanup(curl);
  }
  Result<long> perform(const std::string& hub, long timeout_s) {
    curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT, timeout_s);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    if (const char* ca = std::getenv("CELLSERVE_HUB_CA"); ca != nullptr && *ca != '\0') {
      curl_easy_setopt(curl, CURLOPT_CAINFO, ca);
    }
    const CURLcode rc = curl_easy_perform(curl);
    if (rc != CURLE_OK) return Status::unavailable("hub " + hub + ": " + curl_easy_strerror(rc));
    long status = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    return status;
  }
};

bool curl_ready() {
  static const bool initialised = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
  return initialised;
}

Result<boost::json::value> json_answer(const std::string& hub, long status, const std::string& response);

Result<boost::json::value> json_call(const std::string& hub, const std::string& key, const std::string& method,
                                     const std::string& path, const std::string& body) {
  if (!curl_ready()) return Status::internal("libcurl could not be initialised");
  Call call(hub, path, key);
  if (call.curl == nullptr) return Status::internal("libcurl could not be initialised");
  call.headers = curl_slist_append(call.headers, "Content-Type: application/json");
  std::string response;
  curl_easy_setopt(call.curl, CURLOPT_CUSTOMREQUEST, method.c_str());
  if (!body.empty()) {
    curl_easy_setopt(call.curl, CURLOPT_POSTFIELDS, body.c_str());
    curl_easy_setopt(call.curl, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
  }
  curl_easy_setopt(call.curl, CURLOPT_WRITEFUNCTION, append);
  curl_easy_setopt(call.curl, CURLOPT_WRITEDATA, &response);
  CS_ASSIGN_OR_RETURN(const long status, call.perform(hub, 30));
  return json_answer(hub, status, response);
}

}  // namespace

Result<boost::json::value> hub_request(const std::string& hub, const std::string& method, const std::string& path,
                                       const std::string& body) {
  const char* key = std::getenv("CELLSERVE_HUB_KEY");
  return json_call(hub, key != nullptr ? key : "", method, path, body);
}

Result<boost::json::value> data_request(const std::string& hub, const std::string& key, const std::string& method,
                                        const std::string& path, const std::string& body) {
  return json_call(hub, key, method, path, body);
}

Result<boost::json::value> data_upload(const std::string& hub, const std::string& key, const std::string& path,
                                       const std::string& file_path,
                                       const std::vector<std::pair<std::string, std::string>>& fields) {
  if (!curl_ready()) return Status::internal("libcurl could not be initialised");
  Call call(hub, path, key);
  if (call.curl == nullptr) return Status::internal("libcurl could not be initialised");
  curl_mime* mime = curl_mime_init(call.curl);
  for (const auto& [name, value] : fields) {
    curl_mimepart* part = curl_mime_addpart(mime);
    curl_mime_name(part, name.c_str());
    curl_mime_data(part, value.c_str(), CURL_ZERO_TERMINATED);
  }
  curl_mimepart* file = curl_mime_addpart(mime);
  curl_mime_name(file, "file");
  if (curl_mime_filedata(file, file_path.c_str()) != CURLE_OK) {
    curl_mime_free(mime);
    return Status::not_found(file_path + ": cannot be read");
  }
  std::string response;
  curl_easy_setopt(call.curl, CURLOPT_MIMEPOST, mime);
  curl_easy_setopt(call.curl, CURLOPT_WRITEFUNCTION, append);
  curl_easy_setopt(call.curl, CURLOPT_WRITEDATA, &response);
  auto status = call.perform(hub, 3600);
  curl_mime_free(mime);
  if (!status.ok()) return status.status();
  return json_answer(hub, *status, response);
}

Status data_download(const std::string& hub, const std::string& key, const std::string& path, std::FILE* out) {
  if (!curl_ready()) return Status::internal("libcurl could not be initialised");
  Call call(hub, path, key);
  if (call.curl == nullptr) return Status::internal("libcurl could not be initialised");
  curl_easy_setopt(call.curl, CURLOPT_FAILONERROR, 1L);
  curl_easy_setopt(call.curl, CURLOPT_WRITEDATA, out);
  CS_ASSIGN_OR_RETURN(const long status, call.perform(hub, 3600));
  if (status < 200 || status >= 300) return Status::unavailable("hub " + hub + ": " + std::to_string(status));
  return {};
}

namespace {

Result<boost::json::value> json_answer(const std::string& hub, long status, const std::string& response) {
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

}  // namespace

void print_json(const boost::json::value& v) {
  const std::string text = boost::json::serialize(v);
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fputc('\n', stdout);
}

}  // namespace cellserve::cli
