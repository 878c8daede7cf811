// Helpers shared by the tool-call tests: the template folder, folding stream events into a
// ParsedMessage, random splits, and comparing results whose ids may be random.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json.hpp>

#include "server/tool_calls/tool_call_parser.h"
#include "server/tool_calls/tool_call_stream.h"

namespace cellserve::server::tool_calls::testing {

// shared/testdata/templates ($CELLSERVE_TESTDATA/templates when set); empty when absent.
inline std::filesystem::path templates_dir() {
  std::filesystem::path base;
  if (const char* env = std::getenv("CELLSERVE_TESTDATA"); env != nullptr && *env != 0) {
    base = env;
  } else {
    base = CELLSERVE_TESTDATA_DIR;
  }
  const std::filesystem::path dir = base / "templates";
  return std::filesystem::exists(dir / "README.md") ? dir : std::filesystem::path();
}

#define CS_REQUIRE_TEMPLATES()                                                                               \
  do {                                                                                                       \
    if (::cellserve::server::tool_calls::testing::templates_dir().empty())                                   \
      GTEST_SKIP() << "shared/testdata/templates not found (set CELLSERVE_TESTDATA or place shared/ beside " \
                      "the repository): the chat templates the formats are checked against";                 \
  } while (0)

inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The events as the message they describe; indices must come in order.
inline ParsedMessage fold(const std::vector<StreamEvent>& events, ParsedMessage message = {}) {
  for (const StreamEvent& event : events) {
    if (const auto* c = std::get_if<ContentDelta>(&event)) {
      message.content += c->text;
    } else if (const auto* s = std::get_if<CallStart>(&event)) {
      EXPECT_EQ(s->index, message.tool_calls.size());
      message.tool_calls.push_back({.id = s->id, .name = s->name, .arguments = ""});
    } else {
      const auto& a = std::get<ArgumentsDelta>(event);
      EXPECT_FALSE(message.tool_calls.empty());
      if (message.tool_calls.empty()) continue;
      EXPECT_EQ(a.index, message.tool_calls.size() - 1);
      message.tool_calls.back().arguments += a.text;
    }
  }
  return message;
}

// Cuts `text` into pieces of 0..max_piece bytes at random places (UTF-8 characters may be split).
inline std::vector<std::string_view> random_split(std::string_view text, std::mt19937& rng, std::size_t max_piece) {
  std::vector<std::string_view> pieces;
  std::uniform_int_distribution<std::size_t> size(0, max_piece);
  while (!text.empty()) {
    const std::size_t n = std::min(size(rng), text.size());
    pieces.push_back(text.substr(0, n));
    text.remove_prefix(n);
  }
  return pieces;
}

inline ParsedMessage stream_in_pieces(ToolCallStream& stream, const std::vector<std::string_view>& pieces) {
  ParsedMessage message;
  for (std::string_view piece : pieces) message = fold(stream.feed(piece), std::move(message));
  return fold(stream.finish(), std::move(message));
}

inline bool is_generated_id(const std::string& id) {
  if (id.size() == 9)
    return id.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789") == std::string::npos;
  return id.size() == 29 && id.rfind("call_", 0) == 0 &&
         id.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", 5) == std::string::npos;
}

// Equal, except that two random ids of the same shape count as equal.
inline void expect_same_message(const ParsedMessage& expected, const ParsedMessage& actual) {
  EXPECT_EQ(expected.content, actual.content);
  ASSERT_EQ(expected.tool_calls.size(), actual.tool_calls.size());
  for (std::size_t i = 0; i < expected.tool_calls.size(); ++i) {
    SCOPED_TRACE("call " + std::to_string(i));
    EXPECT_EQ(expected.tool_calls[i].name, actual.tool_calls[i].name);
    EXPECT_EQ(expected.tool_calls[i].arguments, actual.tool_calls[i].arguments);
    const std::string& a = expected.tool_calls[i].id;
    const std::string& b = actual.tool_calls[i].id;
    if (a != b) {
      EXPECT_TRUE(is_generated_id(a) && is_generated_id(b) && a.size() == b.size()) << a << " vs " << b;
    }
  }
}

// The arguments text as JSON (null when it is not JSON).
inline boost::json::value arguments_json(const std::string& arguments) {
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(arguments, ec);
  return ec ? boost::json::value() : v;
}

// No whitespace outside strings.
inline bool is_compact_json(std::string_view text) {
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      in_string = escaped || c != '"';
      escaped = !escaped && c == '\\';
    } else if (c == '"') {
      in_string = true;
    } else if (c == ' ' || c == '\n' || c == '\t' || c == '\r') {
      return false;
    }
  }
  return true;
}

}  // namespace cellserve::server::tool_calls::testing
