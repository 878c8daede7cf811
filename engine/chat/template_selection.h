// Which chat template a server or terminal chat renders with: a Jinja file the operator gives, a
// built-in template by name (builtin_templates.h), or the model's own; a model without one gets
// the built-in chatml, so that any GGUF can chat. The error messages name the command-line
// options (--chat-template, --chat-template-file) that fill TemplateChoice.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"
#include "engine/chat/chat_template.h"
#include "engine/chat/gguf_chat_template.h"
#include "engine/gguf/gguf_file.h"

namespace cellserve::engine::chat {

// What the operator asked for; at most one of the two may be set.
struct TemplateChoice {
  std::string file;  // --chat-template-file: a Jinja template file ("": none)
  std::string name;  // --chat-template: a built-in template's name ("": none)
};

// Where the template in use came from.
enum class TemplateOrigin {
  Model,     // the GGUF's tokenizer.chat_template
  File,      // --chat-template-file
  Builtin,   // --chat-template NAME
  Fallback,  // the model has none and nothing was chosen: the built-in chatml
};

// "model", "file", "builtin", "fallback" (what /props reports as chat_template_source).
std::string_view template_origin_name(TemplateOrigin origin);

struct SelectedTemplate {
  std::optional<ChatTemplate> tmpl;  // always set on success (ChatTemplate has no empty state)
  GgufChatTemplate meta;             // source: the template text in use; bos/eos: the model's token texts
  TemplateOrigin origin = TemplateOrigin::Model;
  std::string name;  // the built-in's name (Builtin, Fallback), the file path (File); "" for Model
};

// What can be checked before the model is loaded: InvalidArgument when both are set, or for a
// name that is not built in (the message lists the names); for a file, that it can be read and
// parses (the errors of select_chat_template() below). Reads the file; the server calls it before
// it starts listening, so a bad option is one line and a non-zero exit.
Status validate_template_choice(const TemplateChoice& choice);

// Reads and parses the chosen template, or the model's own. Errors, each one line:
// validate_template_choice()'s; "--chat-template-file F: <why it could not be read>";
// "--chat-template-file F: <the parser's message>" (with the parser's code: InvalidArgument,
// Unimplemented for Jinja outside the supported subset); "the model's chat template: <message>"
// when the GGUF's template does not parse; DataLoss for a broken BOS/EOS entry in the GGUF.
Result<SelectedTemplate> select_chat_template(const TemplateChoice& choice, const GgufFile& model);

// The start-up log line for `selected`, e.g. "chat template: the model's own", or for a model
// without one: "the model has no chat template; using the built-in chatml (choose another with
// --chat-template NAME or --chat-template-file FILE)".
std::string describe_selected_template(const SelectedTemplate& selected);

}  // namespace cellserve::engine::chat
