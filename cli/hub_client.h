// The CLI's client for the hub's REST API (deploy, deployments, fleet, market): one libcurl
// request, the JSON answer, and the hub's error message turned into one line.
#pragma once

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include "base/status.h"

namespace cellserve::cli {

// METHOD hub + path with an optional JSON body; the parsed JSON of a 2xx answer. Otherwise an
// error carrying the hub's message ("404: no deployment named 'x'"). The hub URL comes from
// --hub or $CELLSERVE_HUB (default http://127.0.0.1:8090); the key from $CELLSERVE_HUB_KEY; for an
// https hub with a private CA, $CELLSERVE_HUB_CA names the CA's PEM file.
Result<boost::json::value> hub_request(const std::string& hub, const std::string& method, const std::string& path,
                                       const std::string& body = {});

// The same on a deployment's own API (the data path), authenticated by `key` (an API key, or the
// admin key; "" : none): a JSON request, a multipart upload of `file_path` with `fields`
// (POST /v1/files), and a download of the answer's body into `out`.
Result<boost::json::value> data_request(const std::string& hub, const std::string& key, const std::string& method,
                                        const std::string& path, const std::string& body = {});
Result<boost::json::value> data_upload(const std::string& hub, const std::string& key, const std::string& path,
                                       const std::string& file_path,
                                       const std::vector<std::pair<std::string, std::string>>& fields);
Status data_download(const std::string& hub, const std::string& key, const std::string& path, std::FILE* out);

// Reading the hub's answers for display: a number (0 when absent or not a number) and a string
// field ("" when absent or not a string).
double json_number(const boost::json::value& v);
double json_number(const boost::json::value* v);
std::string json_string(const boost::json::object& o, const char* key);
// A processor's or replica's `agreement` (spot checks) as one line; "" when it has none.
std::string agreement_text(const boost::json::object& o);
// `v` as one line of JSON on stdout (the listing commands' --json).
void print_json(const boost::json::value& v);

// The default for --hub.
std::string default_hub_url();

}  // namespace cellserve::cli
