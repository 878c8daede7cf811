// Helpers for the chat-template tests: the fixed clock and context the unit cases were rendered
// with in Python's Jinja2, and one-call render functions.
#pragma once

#include <ctime>
#include <string>
#include <string_view>

#include <boost/json.hpp>

#include "base/status.h"
#include "engine/chat/chat_template.h"

namespace cellserve::engine::chat::testing {

// 2026-01-15 09:30:00, a Thursday: what strftime_now() returns in every test.
inline RenderOptions fixed_time_options() {
  RenderOptions options;
  std::tm t{};
  t.tm_year = 2026 - 1900;
  t.tm_mon = 0;
  t.tm_mday = 15;
  t.tm_hour = 9;
  t.tm_min = 30;
  t.tm_wday = 4;
  t.tm_yday = 14;
  options.now = t;
  return options;
}

// The variables of the unit cases (the same object the Python reference renders used).
inline constexpr std::string_view kUnitContext = R"({
  "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},
               {"role": "assistant", "content": "Hello"}],
  "x": 5, "s": "abc", "f": 1.5, "n": null, "t": true, "lst": [3, 1, 2], "e": [],
  "d": {"a": 1, "b": [1, 2]}, "u": "héllo wörld", "tools": [{"name": "f", "args": {"q": "v"}}]})";

// Parses and renders `source` with `context` (a JSON object); the first failure wins.
inline Result<std::string> render(std::string_view source, std::string_view context = kUnitContext,
                                  RenderOptions options = fixed_time_options()) {
  auto tmpl = ChatTemplate::parse(source);
  if (!tmpl.ok()) return tmpl.status();
  return tmpl->render(boost::json::parse(context).as_object(), options);
}

}  // namespace cellserve::engine::chat::testing
