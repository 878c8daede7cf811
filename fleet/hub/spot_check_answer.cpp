#include "fleet/hub/spot_check_answer.h"

#include <boost/json.hpp>

namespace cellserve::fleet {
namespace {

namespace json = boost::json;

// The first choice of an answer object (a chunk or a whole answer): nullptr when absent.
const json::object* first_choice(const json::value& v) {
  const json::object* o = v.if_object();
  if (o == nullptr) return nullptr;
  const json::value* choices = o->if_contains("choices");
  if (choices == nullptr || !choices->is_array()) return nullptr;
  for (const json::value& c : choices->as_array()) {
    const json::object* choice = c.if_object();
    if (choice == nullptr) continue;
    const json::value* index = choice->if_contains("index");
    if (index == nullptr || (index->is_int64() && index->as_int64() == 0)) return choice;
  }
  return nullptr;
}

// The text of a string member `key` of `o` ("" when absent or not a string).
std::string_view member_text(const json::object* o, std::string_view key) {
  if (o == nullptr) return {};
  const json::value* v = o->if_contains(key);
  return v != nullptr && v->is_string() ? std::string_view(v->as_string()) : std::string_view();
}

// The choice's own text: a chat message or delta's content, or a completion's text.
std::string choice_text(const json::object* choice, const char* part) {
  if (choice == nullptr) return {};
  const json::value* m = choice->if_contains(part);
  if (m != nullptr && m->is_object()) return std::string(member_text(m->if_object(), "content"));
  return std::string(member_text(choice, "text"));
}

std::optional<std::string> sse_text(std::string_view body) {
  std::string text;
  bool done = false;
  size_t pos = 0;
  while (pos < body.size()) {
    size_t end = body.find('\n', pos);
    if (end == std::string_view::npos) end = body.size();
    std::string_view line = body.substr(pos, end - pos);
    pos = end + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (!line.starts_with("data:")) continue;
    line.remove_prefix(5);
    if (line.starts_with(' ')) line.remove_prefix(1);
    if (line == "[DONE]") {
      done = true;
      break;
    }
    boost::system::error_code ec;
    const json::value event = json::parse(line, ec);
    if (ec) return std::nullopt;
    if (event.is_object() && event.as_object().contains("error")) return std::nullopt;
    text += choice_text(first_choice(event), "delta");
  }
  if (!done) return std::nullopt;  // a stream that did not end is no answer
  return text;
}

bool blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

}  // namespace

bool spot_checkable(const json::object& body) {
  const json::value* n = body.if_contains("n");
  if (n != nullptr && !(n->is_int64() && n->as_int64() == 1)) return false;
  const json::value* seed = body.if_contains("seed");
  if (seed != nullptr && (seed->is_int64() || seed->is_uint64())) return true;
  const json::value* t = body.if_contains("temperature");
  return t != nullptr && t->is_number() && t->to_number<double>() == 0;
}

bool spot_checked_endpoint(std::string_view rest) { return rest == "/chat/completions" || rest == "/completions"; }

std::optional<std::string> answer_text(std::string_view body) {
  size_t first = 0;
  while (first < body.size() && blank(body[first])) ++first;
  if (body.substr(first).starts_with("data:")) return sse_text(body);
  boost::system::error_code ec;
  const json::value whole = json::parse(body, ec);
  if (ec) return std::nullopt;
  const json::object* choice = first_choice(whole);
  if (choice == nullptr) return std::nullopt;
  return choice_text(choice, "message");
}

std::string compared_part(std::string_view text, std::string_view agreement) {
  if (agreement != "first_line") return std::string(text);
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    while (!line.empty() && blank(line.front())) line.remove_prefix(1);
    while (!line.empty() && blank(line.back())) line.remove_suffix(1);
    if (!line.empty()) return std::string(line);
    pos = end + 1;
  }
  return "";
}

CheckVerdict decide(const std::string& a, const std::string& b, const std::optional<std::string>& c) {
  CheckVerdict v;
  if (a == b) {
    v.first = v.second = CheckOutcome::Agreed;
    return v;
  }
  v.needs_third = true;
  if (!c) return v;  // both Unresolved: no majority
  if (*c == a) {
    v.first = CheckOutcome::Agreed;
    v.second = CheckOutcome::Lost;
    v.third = CheckOutcome::Agreed;
  } else if (*c == b) {
    v.first = CheckOutcome::Lost;
    v.second = CheckOutcome::Agreed;
    v.third = CheckOutcome::Agreed;
  } else {
    v.third = CheckOutcome::Unresolved;  // three answers, no two alike
  }
  return v;
}

}  // namespace cellserve::fleet
