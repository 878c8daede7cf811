// Assistant turns as the real chat templates render them: a conversation whose last assistant
// message carries tool calls is rendered with cs_chat, and the turn is cut out of the rendering:
// the text the model would have generated after the turn's header.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <boost/json.hpp>

#include "base/status.h"
#include "engine/chat/chat_template.h"
#include "server/tool_calls/tool_call_format.h"

namespace cellserve::server::tool_calls::testing {

struct TemplateCase {
  std::string file;
  ToolCallFormat format;
  std::string turn_header;    // how the template opens an assistant turn that has tool calls
  std::string turn_end;       // and how it ends it
  bool renders_content;       // whether it renders the message's content next to its calls
  bool one_call_per_message;  // Llama 3: the template raises on two
  // Where the turn starts when the rendering of the conversation before it is not a prefix of the
  // whole (Mistral Nemo moves the system prompt to the last user message): after the last of these.
  std::string turn_start_after = "";
};

// gtest prints a case by its file.
inline void PrintTo(const TemplateCase& c, std::ostream* os) { *os << c.file; }

// The templates of shared/testdata/templates that render tool calls.
const std::vector<TemplateCase>& template_cases();
// For test names: the file name, alphanumerics only.
std::string template_case_name(const TemplateCase& c);

std::optional<engine::chat::ChatTemplate> load_template(const std::string& file);

// {"id", "type": "function", "function": {"name", "arguments": <arguments parsed>}}.
boost::json::object openai_tool_call(const std::string& id, const std::string& name, const char* arguments);

// The turn `assistant` renders to, after a system and a user message, with `tools` (OpenAI's shape).
Result<std::string> assistant_turn(const TemplateCase& c, const engine::chat::ChatTemplate& tmpl,
                                   boost::json::object assistant, const boost::json::array& tools,
                                   boost::json::object vars = {});

// Content less a reasoning block the templates add before it, and the surrounding whitespace.
std::string visible_content(std::string content);

}  // namespace cellserve::server::tool_calls::testing
