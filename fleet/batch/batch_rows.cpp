#include "fleet/batch/batch_rows.h"

#include <boost/json.hpp>

namespace cellserve::fleet {

namespace json = boost::json;

const char* line_state_name(LineState s) {
  switch (s) {
    case LineState::Pending:
      return "pending";
    case LineState::Leased:
      return "leased";
    case LineState::Done:
      return "done";
    case LineState::Failed:
      return "failed";
  }
  return "pending";
}

std::string errors_json(const std::vector<BatchError>& errors) {
  json::array out;
  for (const BatchError& e : errors) {
    out.push_back(json::object{{"code", e.code}, {"message", e.message}, {"line", e.line}});
  }
  return json::serialize(out);
}

std::vector<BatchError> errors_from_json(const std::string& text) {
  std::vector<BatchError> out;
  boost::system::error_code ec;
  const json::value v = json::parse(text, ec);
  if (ec || !v.is_array()) return out;
  for (const json::value& e : v.as_array()) {
    if (!e.is_object()) continue;
    const json::object& o = e.as_object();
    BatchError be;
    if (const json::value* c = o.if_contains("code"); c && c->is_string()) be.code = std::string(c->as_string());
    if (const json::value* m = o.if_contains("message"); m && m->is_string()) be.message = std::string(m->as_string());
    if (const json::value* l = o.if_contains("line"); l && l->is_int64()) be.line = static_cast<int>(l->as_int64());
    out.push_back(std::move(be));
  }
  return out;
}

}  // namespace cellserve::fleet
