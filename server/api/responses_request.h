// OpenAI's Responses API (POST /v1/responses) read as a chat completion, the way llama-server
// serves it: `instructions` and `input` become chat messages, the flat function tools become
// chat tools, `text.format` becomes `response_format`, `max_output_tokens` the token budget. The
// chat machinery then does the rest (template, tool calls, constraints). Nothing is stored, so a
// request must carry the whole conversation: `previous_response_id` and `conversation` are 400.
#pragma once

#include <optional>

#include <boost/json/object.hpp>

#include "base/status.h"

namespace cellserve::server {

// The chat completion body that `body` (a Responses request) asks for. Errors name the Responses
// field ("input[2].content[0].type", "tools[0].type", "previous_response_id").
Status responses_to_chat(const boost::json::object& body, boost::json::object* chat);

// An error the chat layer found in the translated body, with `param` named as the Responses
// request names it ("messages[3]..." -> "input", "max_completion_tokens" -> "max_output_tokens",
// "response_format..." -> "text.format"). Message indices do not map one to one (instructions,
// merged function calls), so a message's error names "input" as a whole.
Status responses_error(const Status& chat_error);

}  // namespace cellserve::server
