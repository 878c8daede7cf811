#include "fleet/store/list_codec.h"

#include <boost/json/array.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

namespace cellserve::fleet {
namespace json = boost::json;
namespace {

Status corrupt(const char* what, std::string_view text) {
  return Status::data_loss(std::string("stored ") + what +
                           " is not the expected JSON: " + std::string(text.substr(0, 80)));
}

// Parses `text` as a JSON array; nullptr when it is not one. Boost.JSON reports through the
// error code, so nothing throws here (only allocation could).
const json::array* parse_array(std::string_view text, json::value& holder) {
  boost::system::error_code ec;
  holder = json::parse(json::string_view(text.data(), text.size()), ec);
  if (ec) return nullptr;
  return holder.if_array();
}

}  // namespace

std::string encode_string_list(const std::vector<std::string>& items) {
  json::array a;
  for (const auto& s : items) a.emplace_back(json::string_view(s.data(), s.size()));
  return json::serialize(a);
}

Result<std::vector<std::string>> decode_string_list(std::string_view text, const char* what) {
  json::value holder;
  const json::array* a = parse_array(text, holder);
  if (a == nullptr) return corrupt(what, text);
  std::vector<std::string> out;
  out.reserve(a->size());
  for (const auto& v : *a) {
    const json::string* s = v.if_string();
    if (s == nullptr) return corrupt(what, text);
    out.emplace_back(s->data(), s->size());
  }
  return out;
}

}  // namespace cellserve::fleet
